"""docs/protocol/schedules.md rule S6, docs/protocol/schedules.md "Clock and evaluator fences": the
processor compares the persisted runtime epoch and scope generation with the store epoch and the
locked scope generation before evaluating; a mismatch suspends before the cursor moves or Work
exists. release_after_recovery rebinds an old runtime epoch (and the current scope generation) only,
never moving the cursor."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import ReleaseRefused
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    SECOND,
    T0,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def bump_runtime_epoch() -> None:
    rows("update durable_schedule_store set runtime_epoch = runtime_epoch + 1 returning 1")


def bump_scope_generation(scope: str = SCOPE) -> None:
    rows("update durable_schedule_scope set generation = generation + 1 where scope_id = %s"
         " returning 1", (scope,))


def test_runtime_epoch_mismatch__suspends_then_release_rebinds_and_resumes(clock, target):
    create("s", schedules.Every(HOUR), target)
    bump_runtime_epoch()
    counts = run_pass(clock, T0 + HOUR + SECOND)
    assert (counts.claimed, counts.suspended, counts.materialized) == (1, 1, 0)
    d = definition("s")
    assert (d["state"], d["suspension_reason"], d["cursor_utc"]) == (
        "suspended", "runtime_epoch_mismatch", T0)
    assert d["suspension_evidence"]["persisted_runtime_epoch"] == 1
    assert d["suspension_evidence"]["store_runtime_epoch"] == 2
    assert occurrences("s") == [] and works() == [] and dispatch("s")[0] is None
    assert run_pass(clock, T0 + 2 * HOUR).claimed == 0

    clock.set(T0 + HOUR + 5 * MINUTE)
    info = schedules.release_after_recovery(SCOPE, "s", actor="ops")
    assert (info.state, info.runtime_epoch, info.cursor_utc) == ("active", 2, T0)
    assert dispatch("s")[0] == T0 + HOUR + 5 * MINUTE
    event, actor, detail = history("s")[-1]
    assert (event, actor, detail["runtime_epoch"]) == ("released", "ops", {"from": 1, "to": 2})
    assert run_pass(clock).materialized == 1
    assert [o[1:3] for o in occurrences("s")] == [("nominal", T0 + HOUR)]


def test_scope_generation_mismatch__suspends_and_release_refuses_it(clock, target):
    create("s", schedules.Every(HOUR), target)
    bump_scope_generation()
    assert run_pass(clock, T0 + HOUR).suspended == 1
    d = definition("s")
    assert (d["suspension_reason"], d["cursor_utc"]) == ("scope_generation_mismatch", T0)
    with pytest.raises(ReleaseRefused) as err:
        schedules.release_after_recovery(SCOPE, "s")
    assert err.value.code == "DS110"
    assert definition("s") == d
    info = schedules.update(SCOPE, "s", expected_revision=d["revision"])
    assert (info.state, info.scope_generation) == ("active", 2)
    assert run_pass(clock, T0 + 2 * HOUR).materialized == 1


def test_both_fences__the_releasable_epoch_reason_wins_and_release_rebinds_both(clock, target):
    create("s", schedules.Every(HOUR), target)
    bump_runtime_epoch()
    bump_scope_generation()
    run_pass(clock, T0 + HOUR)
    assert definition("s")["suspension_reason"] == "runtime_epoch_mismatch"
    info = schedules.release_after_recovery(SCOPE, "s")
    assert (info.runtime_epoch, info.scope_generation, info.cursor_utc) == (2, 2, T0)


def test_fences__are_checked_before_a_runnable_coalesced_occurrence_is_bridged(clock, target):
    create("s", schedules.Every(10 * MINUTE), target)
    run_pass(clock, T0 + 10 * MINUTE)
    run_pass(clock, T0 + 20 * MINUTE)  # coalesced pending behind the first Work
    [(work_id, *_)] = works()
    bump_runtime_epoch()
    clock.set(T0 + 25 * MINUTE)
    set_work_state(work_id, "succeeded")  # requeues: the coalesced occurrence could run now
    counts = run_pass(clock)
    assert (counts.suspended, counts.materialized) == (1, 0)
    assert [o[4] for o in occurrences("s")] == ["materialized", "pending"]
    assert len(works()) == 1
