"""Run now under ``queue_one`` never overtakes the pending coalesced occurrence
(docs/schedules.md "Run now"): ``queue_one`` keeps the order of what it queued, as ``buffer_all``
keeps its buffer's. With the slot free and a coalesced occurrence still waiting -- a paused
schedule whose Work finished (the terminal-Work trigger does not re-arm a paused schedule), or
an active one whose next pass has not run yet -- ``trigger`` is refused with
``TriggerSlotBusy`` (DS150) and writes nothing; the same request id runs once the coalesced
occurrence ran and its Work finished."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import TriggerSlotBusy
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    history,
    occurrences,
    run_pass,
    set_work_state,
    works,
)
from tests.schedules.test_bad_input import snapshot

pytestmark = pytest.mark.django_db
TERMINAL = ("succeeded", "failed", "expired", "canceled")


def _finish_running() -> None:
    [work_id] = [w[0] for w in works() if w[1] not in TERMINAL]
    set_work_state(work_id, "succeeded")


def _coalesced_waiting_with_a_free_slot(clock, target, *, paused: bool) -> None:
    create("s", schedules.Every(TEN), target)  # queue_one
    run_pass(clock, T0 + TEN)  # 00:10 runs
    run_pass(clock, T0 + 2 * TEN)  # 00:20 coalesces behind it
    if paused:
        schedules.pause(SCOPE, "s", "maintenance")
    clock.set(T0 + 2 * TEN + MINUTE)
    _finish_running()  # the slot is free, the coalesced 00:20 still waits
    assert [(o[1], o[4]) for o in occurrences("s")][-1] == ("coalesced", "pending")


@pytest.mark.parametrize("paused", [True, False])
def test_trigger__queue_one_refuses_to_overtake_a_pending_coalesced_occurrence(clock, target,
                                                                              paused):
    _coalesced_waiting_with_a_free_slot(clock, target, paused=paused)
    before = snapshot()
    with pytest.raises(TriggerSlotBusy, match="a coalesced occurrence waits to run first") as e:
        schedules.trigger(SCOPE, "s", "run-now-1")
    assert e.value.code == "DS150" and e.value.context["coalesced"] == 1
    assert snapshot() == before
    assert "triggered" not in [h[0] for h in history("s")]


def test_trigger__queue_one_runs_the_same_request_once_the_coalesced_occurrence_ran(clock,
                                                                                  target):
    _coalesced_waiting_with_a_free_slot(clock, target, paused=True)
    with pytest.raises(TriggerSlotBusy):
        schedules.trigger(SCOPE, "s", "run-now-1")
    schedules.resume(SCOPE, "s", catch_up="skip")
    run_pass(clock, T0 + 2 * TEN + 2 * MINUTE)  # the coalesced 00:20 runs first
    _finish_running()
    run = schedules.trigger(SCOPE, "s", "run-now-1")
    assert run.created
    assert [(o[1], o[2], o[4]) for o in occurrences("s")] == [
        ("nominal", T0 + TEN, "materialized"),
        ("coalesced", T0 + 2 * TEN, "materialized"),
        ("manual", T0 + 2 * TEN + 2 * MINUTE, "materialized")]


def test_backfill__queue_one_refuses_to_overtake_a_pending_coalesced_occurrence(clock, target):
    # The grid reaches back before the acceptance: 23:30 is an instant the schedule never ran.
    create("s", schedules.Every(TEN, anchor=T0 - 6 * TEN), target)  # queue_one
    run_pass(clock, T0 + TEN)
    run_pass(clock, T0 + 2 * TEN)  # 00:20 coalesces behind 00:10
    clock.set(T0 + 2 * TEN + MINUTE)
    _finish_running()
    before = snapshot()
    with pytest.raises(TriggerSlotBusy, match="a coalesced occurrence waits to run first"):
        schedules.backfill(SCOPE, "s", T0 - 3 * TEN, T0 - 3 * TEN, "bf-1")
    assert snapshot() == before
    run_pass(clock, T0 + 2 * TEN + 2 * MINUTE)  # the coalesced 00:20 runs
    _finish_running()
    assert schedules.backfill(SCOPE, "s", T0 - 3 * TEN, T0 - 3 * TEN, "bf-1").ran
