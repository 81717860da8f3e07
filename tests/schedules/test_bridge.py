"""docs/protocol/schedules.md rules S1 and S7, docs/protocol/schedules.md "Transactions, security,
and target bridge": the Work identity is derived from the occurrence identity; a failure after the
Work insert rolls the decision, the occurrence, the cursor and the Work back together; the retry
yields the same identity and one Work; the occurrence link is compare-or-return and a stored link
that differs is DS113."""

from __future__ import annotations

import uuid

import pytest

from durable_schedule import barriers, schedules
from durable_schedule.errors import OccurrenceLinkConflict, WrongRole
from durable_schedule.processor import batch as batch_module
from durable_schedule.processor import bridge as bridge_module
from durable_schedule.processor import step as step_module
from durable_schedule.processor.bridge import (
    WORK_ID_NAMESPACE,
    OccurrenceIdentity,
    bridge,
    derive_link,
)
from durable_schedule.store.transactions import scoped
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    SECOND,
    T0,
    create,
    definition,
    dispatch,
    occurrences,
    rows,
    run_pass,
    works,
)

pytestmark = pytest.mark.django_db


class Injected(Exception):
    pass


def identity(first=T0 + HOUR, kind="nominal", schedule_id="s", generation=1):
    return OccurrenceIdentity(SCOPE, schedule_id, generation, kind, first)


def test_derive_link__is_a_pure_function_of_the_occurrence_identity():
    link = derive_link(identity())
    assert link == derive_link(identity())
    assert link.work_id == uuid.uuid5(
        WORK_ID_NAMESPACE, '["tenant-a","s",1,"nominal","2030-01-01T13:00:00.000000+00:00"]')
    assert link.command == "schedule:s:1:nominal:2030-01-01T13:00:00.000000+00:00"
    assert link.idempotency_key == f"occurrence:{link.work_id}"
    others = [identity(first=T0 + 2 * HOUR), identity(kind="recovery"),
              identity(schedule_id="t"), identity(generation=2),
              OccurrenceIdentity("tenant-b", "s", 1, "nominal", T0 + HOUR)]
    assert len({derive_link(o).work_id for o in others} | {link.work_id}) == 6


def test_derive_link__a_long_schedule_id_keeps_the_command_within_200_characters():
    long_id = "x" * 200
    link = derive_link(identity(schedule_id=long_id))
    assert len(link.command) <= 200 and link.command.startswith("schedule:~")
    assert link != derive_link(identity(schedule_id="y" * 200))


@pytest.mark.parametrize("where", [
    # The point is reached by the single step (bridge, step) and by the batched pass (batch);
    # a batch that fails is retried alone, which fails at the same point.
    ((bridge_module, batch_module), barriers.SCHEDULE_WORK_AFTER_ACCEPTANCE),
    ((step_module, batch_module), barriers.SCHEDULE_BRIDGE_BEFORE_COMMIT),
])
def test_failure_after_the_work_insert__rolls_everything_back_and_the_retry_is_identical(
        clock, target, monkeypatch, where):
    modules, name = where
    create("s", schedules.Every(HOUR), target)

    def explode(at):
        if at == name:
            raise Injected(at)

    for module in modules:
        monkeypatch.setattr(module, "barrier", explode)
    with pytest.raises(Injected) as err:
        run_pass(clock, T0 + HOUR)
    assert any("schedule_id='s'" in note for note in err.value.__notes__)
    assert occurrences("s") == [] and works() == []
    assert definition("s")["cursor_utc"] == T0
    # The claim committed on its own, so the lease is still held until it expires.
    assert dispatch("s")[1] == "test-dispatcher"
    monkeypatch.undo()
    counts = run_pass(clock, T0 + HOUR + 31 * SECOND)
    assert counts.materialized == 1
    [(generation, kind, first, _l, state, work_id)] = occurrences("s")
    expected = derive_link(identity())
    assert (kind, first, state, work_id) == ("nominal", T0 + HOUR, "materialized",
                                             expected.work_id)
    assert [w[0] for w in works()] == [expected.work_id]


def test_compare_or_return__a_linked_occurrence_returns_its_link_and_adds_no_work(clock, target):
    create("s", schedules.Every(HOUR), target)
    run_pass(clock, T0 + HOUR)
    with scoped(SCOPE) as cur:
        again = bridge(cur, identity(), definition_target(), T0 + HOUR)
    assert (again.link, again.created) == (derive_link(identity()), False)
    assert len(works()) == 1


def definition_target():
    return schedules.get(SCOPE, "s").target_json


def test_compare_or_return__a_planted_mismatching_link_is_a_conflict(clock, target):
    create("s", schedules.Every(HOUR), target)
    run_pass(clock, T0 + HOUR)
    planted = uuid.uuid4()
    rows("update durable_schedule_occurrence set work_id = %s returning 1", (planted,))
    with pytest.raises(OccurrenceLinkConflict) as err, scoped(SCOPE) as cur:
        bridge(cur, identity(), definition_target(), T0 + HOUR)
    assert err.value.code == "DS113"
    assert err.value.context["stored"]["work_id"] == str(planted)
    assert len(works()) == 1


def test_compare_or_return__the_processor_refuses_a_planted_link_and_writes_nothing(
        clock, target):
    create("s", schedules.Every(10 * MINUTE), target)
    run_pass(clock, T0 + 10 * MINUTE)
    run_pass(clock, T0 + 20 * MINUTE)  # a pending coalesced occurrence
    [(first_work, *_)] = works()
    rows("update durable_schedule_occurrence set work_id = %s, work_command = 'x',"
         " work_idempotency_key = 'y' where kind = 'coalesced' returning 1", (uuid.uuid4(),))
    before = (occurrences("s"), definition("s")["cursor_utc"])
    rows("update durable_work set state = 'succeeded' returning 1")  # free the slot (owner)
    rows("update durable_schedule_dispatch set due_at = '-infinity' returning 1")
    with pytest.raises(OccurrenceLinkConflict) as err:
        run_pass(clock, T0 + 25 * MINUTE)
    assert (err.value.context["phase"], err.value.context["schedule_id"]) == ("bridge", "s")
    assert err.value.context["scope_id"] == SCOPE
    assert (occurrences("s"), definition("s")["cursor_utc"]) == before
    assert [w[0] for w in works()] == [first_work]


def test_bridge__refuses_to_run_as_anyone_but_the_runtime_role(clock, target):
    create("s", schedules.Every(HOUR), target)
    from django.db import connection

    with connection.cursor() as cur, pytest.raises(WrongRole):
        bridge(cur, identity(), definition_target(), T0 + HOUR)
