"""docs/schedules.md "Run now" / "Backfill": a backfilled run's Work occupies the slot like any
other. A backfill that runs an instant a misfire skip dropped revives the skipped occurrence,
an older row than the schedule's latest runs: its Work must still hold the slot, so the next
pass coalesces (queue_one) instead of running a second Work beside it."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import TriggerSlotBusy
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    SECOND,
    T0,
    create,
    occurrences,
    run_pass,
    set_work_state,
)

pytestmark = pytest.mark.django_db


def _skipped_then_ran(clock, target, overlap):
    """Every(1 h) with misfire skip: 01:00-03:00 skipped by a late pass, 04:00 ran and
    succeeded. Returns the Work id of the backfilled 01:00 (revived, still queued)."""
    create("s", schedules.Every(HOUR), target, overlap=overlap, misfire="skip",
           safety_window=6 * HOUR)  # 01:00 is 2 h late: skipped, not a clock jump
    run_pass(clock, T0 + 3 * HOUR + SECOND)
    run_pass(clock, T0 + 4 * HOUR + SECOND)
    ran = [o for o in occurrences("s") if o[5] is not None]
    assert [(o[1], o[2]) for o in ran] == [("nominal", T0 + 4 * HOUR)]
    assert set_work_state(ran[0][5], "succeeded") == 1
    done = schedules.backfill(SCOPE, "s", T0 + HOUR, T0 + HOUR, "bf-1")
    assert [t for t, _ in done.ran] == [T0 + HOUR]
    return done.ran[0][1]


@pytest.mark.parametrize("batch_size", [1, 100], ids=["single-step", "batched"])
def test_revived_backfill__its_work_holds_the_slot_for_the_next_pass(clock, target, batch_size):
    backfilled = _skipped_then_ran(clock, target, "queue_one")
    counts = run_pass(clock, T0 + 5 * HOUR + SECOND, batch_size=batch_size)
    # The backfilled Work is still queued: 05:00 waits behind it, coalesced, no second Work.
    assert (counts.materialized, counts.coalesced) == (0, 1), counts
    linked = [o for o in occurrences("s") if o[5] is not None]
    assert {o[5] for o in linked} >= {backfilled}
    assert not [o for o in linked if o[2] == T0 + 5 * HOUR]
    # Once it ends, the coalesced 05:00 runs (the terminal-Work trigger made the row due).
    assert set_work_state(backfilled, "succeeded") == 1
    counts = run_pass(clock, T0 + 5 * HOUR + 2 * SECOND, batch_size=batch_size)
    assert counts.materialized == 1, counts
    assert [o[1:3] for o in occurrences("s") if o[4] == "materialized"][-1] \
        == ("coalesced", T0 + 5 * HOUR)


def test_revived_backfill__its_work_holds_the_slot_for_trigger_and_backfill(clock, target):
    _skipped_then_ran(clock, target, "skip")
    with pytest.raises(TriggerSlotBusy):
        schedules.trigger(SCOPE, "s", "run-now-1", actor="bob")
    with pytest.raises(TriggerSlotBusy):
        schedules.backfill(SCOPE, "s", T0 + 2 * HOUR, T0 + 2 * HOUR, "bf-2")


def test_switch_from_allow_all__an_older_work_still_does_not_hold_the_slot(clock, target):
    """docs/schedules.md: switching from allow_all to queue_one treats the slot as held by the
    latest linked occurrence's Work only -- also for a schedule that skipped before (the
    revived-run read above must not widen it)."""
    create("s", schedules.Every(HOUR), target, overlap="allow_all", misfire="skip",
           safety_window=6 * HOUR)
    run_pass(clock, T0 + 2 * HOUR + SECOND)  # 01:00-02:00 skipped: missed counted
    run_pass(clock, T0 + 3 * HOUR + SECOND)  # 03:00 runs (W3)
    run_pass(clock, T0 + 4 * HOUR + SECOND)  # 04:00 runs beside it (W4)
    w3, w4 = [o[5] for o in occurrences("s") if o[5] is not None]
    assert set_work_state(w4, "succeeded") == 1  # W3 still queued
    info = schedules.get(SCOPE, "s")
    schedules.update(SCOPE, "s", expected_revision=info.revision, overlap="queue_one")
    counts = run_pass(clock, T0 + 5 * HOUR + SECOND)
    assert counts.materialized == 1, counts


def test_revived_backfill__at_the_instant_of_the_skip_still_holds_the_slot(clock, target):
    """With the clock seam standing still, the revive happens at the very instant the skip was
    recorded: the revived run is recognised by its Work, accepted after the latest one."""
    create("s", schedules.Every(HOUR), target, misfire="skip", safety_window=6 * HOUR)
    run_pass(clock, T0 + HOUR + SECOND)  # 01:00 runs
    [(w1, *_)] = [(o[5],) for o in occurrences("s") if o[5] is not None]
    assert set_work_state(w1, "succeeded") == 1
    run_pass(clock, T0 + 3 * HOUR + SECOND)  # 02:00-03:00 skipped
    done = schedules.backfill(SCOPE, "s", T0 + 2 * HOUR, T0 + 2 * HOUR, "bf")  # same instant
    assert [t for t, _ in done.ran] == [T0 + 2 * HOUR]
    counts = run_pass(clock, T0 + 4 * HOUR + SECOND)
    assert (counts.materialized, counts.coalesced) == (0, 1), counts
