"""``buffer_all``: a buffered occurrence has the kind it would have had running at once
(docs/schedules.md "Overlap policies", "`buffer_all` in detail"). A single instant that fell
while the schedule was paused, caught up under misfire ``run_once``, is a ``recovery`` run
unbuffered (docs/schedules.md "Pause and resume"), so it is a ``recovery`` occurrence buffered
too: the same kind, hence the same derived Work id and no jitter offset, in both paths."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db
TERMINAL = ("succeeded", "failed", "expired", "canceled")


def _finish_running() -> None:
    [work_id] = [w[0] for w in works() if w[1] not in TERMINAL]
    set_work_state(work_id, "succeeded")


def _ran() -> list[tuple]:
    return rows("select o.first_nominal_utc, o.kind from durable_work w"
                " join durable_schedule_occurrence o on o.scope_id = w.scope_id"
                " and o.id = w.source_occurrence_id where w.scope_id = %s order by w.id",
                (SCOPE,))


def _one_instant_missed_while_paused(clock, target, *, slot_held: bool) -> None:
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="buffer_all",
           misfire="run_once", jitter=timedelta(minutes=5))
    run_pass(clock, T0 + TEN)  # 00:10 runs
    clock.set(T0 + TEN + MINUTE)
    schedules.pause(SCOPE, "s", "maintenance", actor="ops")
    clock.set(T0 + 2 * TEN + 5 * MINUTE)  # 00:20 fell while paused
    if not slot_held:
        _finish_running()
    schedules.resume(SCOPE, "s", actor="ops")  # catch_up="misfire_policy"
    run_pass(clock, T0 + 2 * TEN + 6 * MINUTE)


def test_buffer_all__an_instant_missed_while_paused_runs_as_recovery_with_a_free_slot(
        clock, target):
    _one_instant_missed_while_paused(clock, target, slot_held=False)
    assert _ran() == [(T0 + TEN, "nominal"), (T0 + 2 * TEN, "recovery")]


def test_buffer_all__an_instant_missed_while_paused_is_buffered_as_recovery(clock, target):
    _one_instant_missed_while_paused(clock, target, slot_held=True)
    [(kind, first, last, jitter_us)] = rows(
        "select kind, first_nominal_utc, last_nominal_utc, jitter_us"
        " from durable_schedule_occurrence where scope_id = %s and schedule_id = 's'"
        " and state = 'pending'", (SCOPE,))
    assert (kind, first, last) == ("recovery", T0 + 2 * TEN, T0 + 2 * TEN)
    assert jitter_us is None  # late already: a recovery occurrence is not jittered
    _finish_running()
    run_pass(clock, T0 + 2 * TEN + 7 * MINUTE)
    assert _ran() == [(T0 + TEN, "nominal"), (T0 + 2 * TEN, "recovery")]
    assert [o[1] for o in occurrences("s")] == ["nominal", "recovery"]
