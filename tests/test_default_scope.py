"""Issue 17 item 1: DURABLE_SCHEDULE['DEFAULT_SCOPE'] for single-tenant projects.

Every public call that omits the scope uses the setting; without it, an omitted scope is DS410
before any database access; an invalid setting is DS411 through the settings check (E005).
Calls that pass a scope behave exactly as before.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from demo.work import touch
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from durable_schedule import checks, conf, schedules, work
from durable_schedule import errors as schedules_errors
from durable_schedule.errors import InvalidDefaultScope, ScopeRequired

pytestmark = pytest.mark.django_db
DAY = timedelta(hours=24)
single_tenant = override_settings(DURABLE_SCHEDULE={"DEFAULT_SCOPE": "main"})


def target():
    return schedule_targets.report.target(payload={"report": "nightly"})


@single_tenant
def test_default_scope__every_schedule_call_without_a_scope_uses_it(clock):
    created = schedules.create("nightly", schedules.Every(DAY), target())
    assert created.scope == "main"
    assert schedules.get("nightly").revision == created.revision
    assert schedules.get(schedule_id="nightly").scope == "main"
    assert [s.schedule_id for s in schedules.list()] == ["nightly"]
    assert [s.schedule_id for s in schedules.list(states=["active"])] == ["nightly"]
    updated = schedules.update("nightly", spec=schedules.Every(2 * DAY),
                               expected_revision=created.revision)
    assert updated.generation == 2
    suspended = schedules.suspend("nightly", "maintenance", actor="ops")
    assert suspended.state == "suspended"
    assert schedules.delete("nightly", actor="ops").state == "deleted"
    # Passing None is the same as leaving the scope out.
    assert schedules.get(None, "nightly").state == "deleted"
    assert schedules.get(scope=None, schedule_id="nightly").state == "deleted"


@single_tenant
def test_default_scope__work_calls_without_a_scope_use_it(clock):
    accepted = touch.enqueue(command="c1", idempotency_key="k1", payload={})
    assert work.get(accepted.work_id).scope == "main"
    assert [w.work_id for w in work.list()] == [accepted.work_id]
    assert [w.work_id for w in work.list(state="pending")] == [accepted.work_id]
    again = work.enqueue(touch.request(command="c1", idempotency_key="k1", payload={}))
    assert again.work_id == accepted.work_id and not again.created
    assert work.cancel(accepted.work_id, actor="ops") == "canceled"


@single_tenant
def test_default_scope__an_explicit_scope_still_wins(clock):
    schedules.create("tenant-7", "nightly", schedules.Every(DAY), target())
    accepted = touch.enqueue(scope="tenant-7", command="c1", idempotency_key="k1", payload={})
    assert schedules.list() == []
    assert work.list() == []
    assert [s.schedule_id for s in schedules.list("tenant-7")] == ["nightly"]
    assert work.get("tenant-7", accepted.work_id).scope == "tenant-7"


def test_default_scope__omitted_without_the_setting_is_ds410_before_any_query(clock):
    calls = [
        lambda: schedules.create("nightly", schedules.Every(DAY), target()),
        lambda: schedules.get("nightly"),
        lambda: schedules.list(),
        lambda: touch.enqueue(command="c1", idempotency_key="k1", payload={}),
        lambda: work.list(state="pending"),
        lambda: work.get(scope=None, work_id="00000000-0000-0000-0000-000000000001"),
    ]
    for call in calls:
        with CaptureQueriesContext(connection) as queries, pytest.raises(ScopeRequired) as err:
            call()
        assert err.value.code == "DS410"
        assert "DEFAULT_SCOPE" in str(err.value)
        assert len(queries) == 0
    assert work.list("tenant-a") == []  # nothing was written anywhere


@single_tenant
def test_default_scope__wrong_arguments_keep_pythons_own_error():
    with pytest.raises(TypeError):
        schedules.get()
    with pytest.raises(TypeError):
        schedules.create("a", "b", "c", "d", "e")


@pytest.mark.parametrize("value", ["", " main", "a\nb", 7, "x" * 201])
def test_default_scope__an_invalid_setting_is_ds411_from_the_settings_check(value):
    with override_settings(DURABLE_SCHEDULE={"DEFAULT_SCOPE": value}):
        with pytest.raises(InvalidDefaultScope) as err:
            conf.validate()
        assert err.value.code == "DS411"
        [message] = checks.check_settings()
        assert message.id == "durable_schedule.E005" and "DS411" in message.msg


def test_default_scope__none_and_a_valid_id_pass_the_check():
    for value in (None, "main"):
        with override_settings(DURABLE_SCHEDULE={"DEFAULT_SCOPE": value}):
            assert checks.check_settings() == []


@single_tenant
def test_default_scope__an_error_of_the_call_is_not_chained_to_the_scope_lookup(clock):
    """A call that left the scope out raised its own errors (DS109 for a second create) from
    inside the wrapper's ``except TypeError``: the traceback then began with "TypeError:
    missing a required argument: 'target'" and "During handling of the above exception,
    another exception occurred", which sent a reader after an argument that was never
    missing. The call's error carries no such context."""
    schedules.create("nightly", schedules.Every(DAY), target())
    with pytest.raises(schedules_errors.ScheduleAlreadyExists) as err:
        schedules.create("nightly", schedules.Every(DAY), target())
    assert err.value.__context__ is None and err.value.__cause__ is None
    # Python's own TypeError for arguments wrong with and without a scope: no context either.
    with pytest.raises(TypeError) as wrong:
        schedules.create("a", "b", "c", "d", "e")
    assert wrong.value.__context__ is None


@single_tenant
def test_default_scope__declare_without_a_scope_uses_it():
    """getting-started.md: with DEFAULT_SCOPE every schedules.* call that leaves the scope out
    uses it. schedules.declare required its keyword scope (TypeError), and scope=None was
    DS301 "scope must be a string"."""
    from durable_schedule.schedules import declared

    spec, payload = schedules.Every(DAY), schedule_targets.report.target(payload={})
    try:
        assert schedules.declare("declared-a", spec, target=payload).scope == "main"
        assert schedules.declare("declared-b", spec, target=payload, scope=None).scope == "main"
        assert schedules.declare("declared-c", spec, target=payload,
                                 scope="tenant-7").scope == "tenant-7"
    finally:
        for scope, name in (("main", "declared-a"), ("main", "declared-b"),
                            ("tenant-7", "declared-c")):
            declared.forget(scope, name)


def test_default_scope__declare_without_a_scope_or_the_setting_is_ds410():
    with pytest.raises(ScopeRequired):
        schedules.declare("declared-d", schedules.Every(DAY),
                          target=schedule_targets.report.target(payload={}))
