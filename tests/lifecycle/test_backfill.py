"""Backfill (issue 14 item 7): the instants of a past range as recovery occurrences, one per
instant, so a repeated backfill of an overlapping range creates no duplicate; under the overlap
policy; the cursor does not move."""

from __future__ import annotations

import json

import pytest

from durable_schedule import schedules
from durable_schedule.errors import BackfillRefused, InvalidArgument, TriggerSlotBusy
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    history,
    occurrences,
    works,
)

pytestmark = pytest.mark.django_db


def past_schedule(clock, target, overlap):
    """An Every(10 min) anchored 2 h before T0, created at T0 and run to 01:00 past T0, where
    every Work then finishes: 24 grid instants before its acceptance are back-fillable."""
    create("s", schedules.Every(TEN, anchor=T0 - 2 * HOUR), target, overlap=overlap)
    clock.set(T0 + HOUR)


def test_backfill__twice_over_overlapping_ranges_makes_no_duplicate(clock, target):
    past_schedule(clock, target, "allow_all")
    first = schedules.backfill(SCOPE, "s", T0 - HOUR, T0 - 30 * MINUTE, "bf-1", actor="alice")
    assert [t for t, _ in first.ran] == [T0 - HOUR + k * TEN for k in range(4)]
    second = schedules.backfill(SCOPE, "s", T0 - 40 * MINUTE, T0 - 20 * MINUTE, "bf-2")
    assert [t for t, _ in second.ran] == [T0 - 20 * MINUTE]  # 00:40 and 00:30 exist
    assert second.existing == [T0 - 40 * MINUTE, T0 - 30 * MINUTE]
    assert len(works()) == 5
    assert all(o[1] == "recovery" and o[2] == o[3] for o in occurrences("s"))
    assert definition("s")["cursor_utc"] == T0  # the cursor did not move
    event, actor, detail = history("s")[-2]
    assert (event, actor, detail["request_id"]) == ("backfilled", "alice", "bf-1")


def test_backfill__skip_runs_the_first_instant_and_records_the_others_skipped(clock, target):
    past_schedule(clock, target, "skip")
    done = schedules.backfill(SCOPE, "s", T0 - 30 * MINUTE, T0 - 10 * MINUTE, "bf")
    assert [t for t, _ in done.ran] == [T0 - 30 * MINUTE]
    assert done.skipped == [T0 - 20 * MINUTE, T0 - 10 * MINUTE]
    assert [o[4] for o in occurrences("s")] == ["materialized", "skipped", "skipped"]
    assert json.loads(definition("s")["missed"]) == {"overlap": 2}
    with pytest.raises(TriggerSlotBusy):  # the backfilled Work holds the slot now
        schedules.backfill(SCOPE, "s", T0 - HOUR, T0 - HOUR, "bf-2")


def test_backfill__queue_one_runs_one_instant_per_request(clock, target):
    past_schedule(clock, target, "queue_one")
    with pytest.raises(BackfillRefused):
        schedules.backfill(SCOPE, "s", T0 - 30 * MINUTE, T0 - 10 * MINUTE, "bf")
    assert occurrences("s") == []
    one = schedules.backfill(SCOPE, "s", T0 - 30 * MINUTE, T0 - 30 * MINUTE, "bf")
    assert len(one.ran) == 1


def test_backfill__refuses_ranges_that_are_not_past_for_the_schedule(clock, target):
    past_schedule(clock, target, "allow_all")  # cursor T0, clock T0 + 1 h
    with pytest.raises(BackfillRefused):  # after the cursor: the schedule's own instants
        schedules.backfill(SCOPE, "s", T0, T0 + 30 * MINUTE, "bf")
    with pytest.raises(InvalidArgument):  # in the future
        schedules.backfill(SCOPE, "s", T0, T0 + 2 * HOUR, "bf")
    with pytest.raises(InvalidArgument):  # reversed
        schedules.backfill(SCOPE, "s", T0, T0 - HOUR, "bf")
    create("far", schedules.Every(TEN, anchor=T0 - 100 * 24 * HOUR), target,
           overlap="allow_all")
    with pytest.raises(BackfillRefused):  # 14 400 instants, more than 1000 per backfill
        schedules.backfill(SCOPE, "far", T0 - 100 * 24 * HOUR, T0 - HOUR, "bf")
    assert occurrences("s") == occurrences("far") == [] and works() == []


def test_backfill__instants_before_start_at_do_not_exist_and_are_not_run(clock, target):
    """Review: ``start_at`` means no instant before it exists for the generation, so a
    backfill over a range that begins earlier runs only the instants from ``start_at`` on."""
    create("s", schedules.Every(TEN, anchor=T0 - 2 * HOUR), target, overlap="allow_all",
           start_at=T0 - HOUR)
    clock.set(T0 + HOUR)
    done = schedules.backfill(SCOPE, "s", T0 - 2 * HOUR, T0 - 30 * MINUTE, "bf")
    assert [t for t, _ in done.ran] == [T0 - HOUR + k * TEN for k in range(4)]
    assert min(o[2] for o in occurrences("s")) == T0 - HOUR


def test_backfill__never_runs_more_than_max_runs_allows_and_refuses_writing_nothing(clock,
                                                                                    target):
    """Review: a backfill's runs count toward ``max_runs`` like any recovery run, so one that
    would run more than the runs left is refused (DS153) and writes nothing."""
    create("s", schedules.Every(TEN, anchor=T0 - 2 * HOUR), target, overlap="allow_all",
           max_runs=3)
    clock.set(T0 + HOUR)
    with pytest.raises(BackfillRefused, match="max_runs") as refused:
        schedules.backfill(SCOPE, "s", T0 - HOUR, T0 - 30 * MINUTE, "bf-1")  # 4 instants
    assert refused.value.code == "DS153"
    assert occurrences("s") == [] and works() == []
    done = schedules.backfill(SCOPE, "s", T0 - HOUR, T0 - 40 * MINUTE, "bf-2")  # 3: allowed
    assert len(done.ran) == 3
    with pytest.raises(BackfillRefused, match="max_runs"):
        schedules.backfill(SCOPE, "s", T0 - 30 * MINUTE, T0 - 30 * MINUTE, "bf-3")
