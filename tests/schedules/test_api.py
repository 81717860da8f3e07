"""Issue 4 item 2: the schedule API — scoped, transaction-timestamped, audited, re-arming the
dispatch row, and append-only generations (docs/protocol/schedules.md rules S2 and S5;
docs/protocol/schedules.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from durable_schedule import conf, schedules
from durable_schedule.errors import (
    ReleaseRefused,
    RevisionMismatch,
    ScheduleAlreadyExists,
    ScheduleDeleted,
    ScheduleNotFound,
    ScheduleNotSuspended,
)
from durable_schedule.evaluation.timeline import EVALUATOR_VERSION
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    T0,
    create,
    definition,
    dispatch,
    history,
    one,
    rows,
)

pytestmark = pytest.mark.django_db


def generation_rows(schedule_id: str):
    return rows("select generation, kind, spec::text, accepted_at_utc, target::text,"
                " overlap_policy, misfire_policy, safety_window, evaluator_version, created_by"
                " from durable_schedule_generation where scope_id = %s and schedule_id = %s"
                " order by generation", (SCOPE, schedule_id))


def test_create__persists_generation_one_with_evaluator_version_and_database_time(clock, target):
    clock.set(T0 + timedelta(microseconds=123))
    info = create("nightly", schedules.Every(HOUR), target, actor="alice")
    accepted = T0 + timedelta(microseconds=123)
    assert (info.state, info.revision, info.generation) == ("active", 1, 1)
    assert info.accepted_at_utc == accepted and info.cursor_utc == accepted
    assert info.next_nominal_utc == accepted + HOUR
    [gen] = generation_rows("nightly")
    assert gen[0:2] == (1, "every")
    assert gen[3] == accepted
    assert gen[5:] == ("queue_one", "run_once", conf.safety_window(), EVALUATOR_VERSION, "alice")
    d = definition("nightly")
    assert (d["cursor_utc"], d["runtime_epoch"], d["scope_generation"]) == (accepted, 1, 1)
    assert dispatch("nightly") == (accepted + HOUR, None, 1)
    [(event, actor, detail)] = history("nightly")
    assert (event, actor, detail["revision"]) == ("created", "alice", 1)


def test_create__joins_the_callers_transaction_and_rolls_back_with_it(clock, target):
    with pytest.raises(RuntimeError), transaction.atomic():
        create("nightly", schedules.Every(HOUR), target)
        assert schedules.get(SCOPE, "nightly").state == "active"
        raise RuntimeError("caller fails after creating")
    assert rows("select count(*) from durable_schedule_definition") == [(0,)]
    assert rows("select count(*) from durable_schedule_dispatch") == [(0,)]


def test_create__an_existing_identity_is_refused(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    with pytest.raises(ScheduleAlreadyExists) as err:
        create("nightly", schedules.Every(MINUTE), target)
    assert err.value.code == "DS109"
    assert len(generation_rows("nightly")) == 1


def test_create__the_same_identity_in_another_scope_is_independent(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    other = create("nightly", schedules.Every(MINUTE), target, scope="tenant-b")
    assert other.spec == schedules.Every(MINUTE)
    assert schedules.get(SCOPE, "nightly").spec == schedules.Every(HOUR)
    with pytest.raises(ScheduleNotFound):
        schedules.get("tenant-c", "nightly")


def test_update__creates_a_new_generation_and_never_rewrites_the_old_one(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    before = generation_rows("nightly")
    clock.set(T0 + 10 * MINUTE)
    info = schedules.update(SCOPE, "nightly", expected_revision=1,
                            spec=schedules.Every(2 * HOUR), actor="bob")
    assert (info.generation, info.revision, info.state) == (2, 2, "active")
    assert info.accepted_at_utc == T0 + 10 * MINUTE
    assert info.cursor_utc == T0 + 10 * MINUTE
    gens = generation_rows("nightly")
    assert gens[0] == before[0]
    assert gens[1][0] == 2 and gens[1][3] == T0 + 10 * MINUTE and gens[1][9] == "bob"
    assert gens[1][4] == before[0][4]  # the target snapshot was carried, not rewritten
    due, lease, revision = dispatch("nightly")
    assert (due, lease, revision) == (T0 + 10 * MINUTE + 2 * HOUR, None, 2)
    assert [e for e, _, _ in history("nightly")] == ["created", "updated"]


def test_update__arguments_left_out_keep_the_active_generation(clock, target):
    create("nightly", schedules.Every(HOUR), target, misfire="skip",
           safety_window=timedelta(minutes=5))
    info = schedules.update(SCOPE, "nightly", expected_revision=1)
    assert info.spec == schedules.Every(HOUR)
    assert (info.misfire, info.safety_window) == ("skip", timedelta(minutes=5))
    assert info.target == target


def test_update__with_a_stale_revision_is_refused(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    schedules.update(SCOPE, "nightly", expected_revision=1)
    with pytest.raises(RevisionMismatch) as err:
        schedules.update(SCOPE, "nightly", expected_revision=1, spec=schedules.Every(MINUTE))
    assert err.value.code == "DS106" and err.value.context["revision"] == 2
    assert len(generation_rows("nightly")) == 2


def test_delete__is_terminal_and_every_later_command_is_refused(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    info = schedules.delete(SCOPE, "nightly", expected_revision=1, actor="carol")
    assert (info.state, info.revision, info.next_nominal_utc) == ("deleted", 2, None)
    assert dispatch("nightly") == (None, None, 2)
    for command in (
        lambda: schedules.update(SCOPE, "nightly", expected_revision=2),
        lambda: schedules.delete(SCOPE, "nightly"),
        lambda: schedules.suspend(SCOPE, "nightly", "pause"),
        lambda: schedules.release_after_recovery(SCOPE, "nightly"),
        lambda: create("nightly", schedules.Every(HOUR), target),
    ):
        with pytest.raises(ScheduleDeleted) as err:
            command()
        assert err.value.code == "DS107"
    assert schedules.get(SCOPE, "nightly").state == "deleted"
    assert [(e, a) for e, a, _ in history("nightly")] == [("created", ""), ("deleted", "carol")]
    assert len(generation_rows("nightly")) == 1


def test_suspend__operator_suspension_stops_dispatch_and_update_resumes(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    info = schedules.suspend(SCOPE, "nightly", "maintenance window", "ops")
    assert (info.state, info.suspension_reason) == ("suspended", "operator")
    assert info.suspension_evidence["note"] == "maintenance window"
    assert dispatch("nightly")[0] is None
    again = schedules.suspend(SCOPE, "nightly", "twice", "ops")
    assert again.revision == info.revision and again.suspension_evidence["note"] != "twice"
    with pytest.raises(ReleaseRefused):
        schedules.release_after_recovery(SCOPE, "nightly")
    resumed = schedules.update(SCOPE, "nightly", expected_revision=info.revision, actor="ops")
    assert (resumed.state, resumed.suspension_reason) == ("active", None)
    assert dispatch("nightly")[0] == T0 + HOUR
    assert [e for e, _, _ in history("nightly")] == ["created", "suspended", "updated"]


def test_release__of_an_active_schedule_is_refused(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    with pytest.raises(ScheduleNotSuspended) as err:
        schedules.release_after_recovery(SCOPE, "nightly")
    assert err.value.code == "DS116"


def test_get_and_list__read_the_scope_only_in_schedule_id_order(clock, target):
    for name in ("c", "a", "b"):
        create(name, schedules.Every(HOUR), target)
    create("z", schedules.Every(HOUR), target, scope="tenant-b")
    schedules.delete(SCOPE, "b")
    assert [i.schedule_id for i in schedules.list(SCOPE)] == ["a", "b", "c"]
    assert [i.schedule_id for i in schedules.list(SCOPE, states=["active"])] == ["a", "c"]
    assert [i.schedule_id for i in schedules.list(SCOPE, after="a", limit=1)] == ["b"]
    assert schedules.get(SCOPE, "a").scope == SCOPE
    with pytest.raises(ScheduleNotFound) as err:
        schedules.get(SCOPE, "z")
    assert err.value.code == "DS108"


def test_info__a_tampered_generation_reads_back_with_spec_none(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    with transaction.atomic():
        rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
             " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
             " evaluator_version, created_by) select scope_id, schedule_id, 2, kind,"
             " '{\"interval_us\": -1, \"anchor\": null}', accepted_at_utc, target,"
             " overlap_policy, misfire_policy, safety_window, evaluator_version, ''"
             " from durable_schedule_generation where schedule_id = 'nightly' returning id")
        rows("update durable_schedule_definition set active_generation = 2 returning id")
    info = schedules.get(SCOPE, "nightly")
    assert info.spec is None and info.spec_json == {"interval_us": -1, "anchor": None}
    assert info.next_nominal_utc is None
    repaired = schedules.update(SCOPE, "nightly", expected_revision=1,
                                spec=schedules.Every(HOUR))
    assert repaired.spec == schedules.Every(HOUR) and repaired.generation == 3


def test_api__runs_as_the_runtime_role_and_restores_the_callers_role(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    assert one("select current_user = session_user,"
               " coalesce(current_setting('durable_schedule.scope_id', true), '')") == (True, "")
