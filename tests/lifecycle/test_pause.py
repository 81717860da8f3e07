"""Pause and resume (issue 14 item 1): an operator state beside the protocol's suspensions; the
dispatch row is disarmed while paused; resume keeps the generation's anchor and grid, needs no
target code, and handles the instants missed while paused as documented (docs/schedules.md
"Pause and resume")."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import (
    InvalidCatchUp,
    ScheduleDeleted,
    ScheduleNotPausable,
    ScheduleNotPaused,
)
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)
NINE = datetime(2030, 1, 2, 9, 0, tzinfo=UTC)  # a daily grid at 09:00 UTC, after T0


def test_pause__disarms_the_dispatch_row_and_records_note_actor_and_time(clock, target):
    create("s", schedules.Every(TEN), target)
    paused = schedules.pause(SCOPE, "s", "db maintenance", actor="alice")
    assert (paused.state, paused.paused_by, paused.pause_note) == ("paused", "alice",
                                                                   "db maintenance")
    assert paused.paused_at == T0 and paused.next_nominal_utc is None
    assert dispatch("s")[0] is None  # the claim never sees it
    counts = run_pass(clock, T0 + 45 * MINUTE)
    assert counts.claimed == 0 and occurrences("s") == [] and works() == []
    event, actor, detail = history("s")[-1]
    assert (event, actor, detail["note"]) == ("paused", "alice", "db maintenance")
    again = schedules.pause(SCOPE, "s", "twice", actor="bob")  # idempotent: unchanged
    assert (again.revision, again.pause_note) == (paused.revision, "db maintenance")


def test_resume__a_daily_schedule_keeps_its_time_of_day(clock, target):
    create("daily", schedules.Every(DAY, anchor=NINE), target)
    run_pass(clock, NINE)  # the 09:00 run, which then finishes
    assert set_work_state(works()[0][0], "succeeded") == 1
    clock.set(NINE + 2 * HOUR)
    schedules.pause(SCOPE, "daily", "holiday", actor="alice")
    clock.set(NINE + 2 * DAY + 12 * MINUTE)  # resumed at 09:12, two days later
    info = schedules.resume(SCOPE, "daily", actor="alice", catch_up="skip")
    assert info.state == "active" and info.generation == 1  # no new generation, no re-anchor
    assert info.next_nominal_utc == NINE + 3 * DAY  # 09:00 again, not 09:12
    run_pass(clock, NINE + 3 * DAY)
    kinds = [(o[1], o[2], o[4]) for o in occurrences("daily")]
    assert kinds == [("nominal", NINE, "materialized"),
                     ("nominal", NINE + 3 * DAY, "materialized")]
    assert json.loads(definition("daily")["missed"]) == {"paused": 2}  # two 09:00s skipped
    assert schedules.get(SCOPE, "daily").missed == {"paused": 2}


def test_resume__misfire_policy_runs_the_missed_range_once_and_a_long_pause_is_no_clock_jump(
        clock, target):
    create("s", schedules.Every(TEN), target)  # safety window 1 h
    schedules.pause(SCOPE, "s", "long", actor="alice")
    clock.set(T0 + 5 * HOUR)  # 30 instants fell while paused, the earliest 4 h 50 min late
    schedules.resume(SCOPE, "s", actor="alice")  # catch_up="misfire_policy" (run_once)
    counts = run_pass(clock, T0 + 5 * HOUR + MINUTE)
    assert (counts.suspended, counts.recovered) == (0, 1)
    [(_, kind, first, last, state, _)] = occurrences("s")
    assert (kind, first, last, state) == ("recovery", T0 + TEN, T0 + 5 * HOUR, "materialized")
    assert definition("s")["state"] == "active"


def test_resume__a_jump_after_the_resume_still_suspends(clock, target):
    create("s", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "s", "x", actor="alice")
    clock.set(T0 + 5 * HOUR)
    schedules.resume(SCOPE, "s", actor="alice")
    counts = run_pass(clock, T0 + 7 * HOUR)  # no pass for 2 h after the resume: too late
    assert counts.suspended == 1
    assert definition("s")["suspension_reason"] == "clock_jump"


def test_resume__needs_no_target_code(clock, target, monkeypatch):
    create("s", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "s", "x", actor="alice")
    from durable_schedule.work import registry
    monkeypatch.setattr(registry, "_REGISTRY", {}, raising=False)  # nothing registered
    monkeypatch.setattr(registry, "lookup", _refuse)
    info = schedules.resume(SCOPE, "s", actor="alice")
    assert info.state == "active"


def _refuse(*args, **kwargs):
    raise AssertionError("resume must not look the target up")


def test_update__keeps_a_paused_schedule_paused(clock, target):
    info = create("s", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "s", "x", actor="alice")
    clock.set(T0 + MINUTE)
    paused = schedules.get(SCOPE, "s")
    updated = schedules.update(SCOPE, "s", expected_revision=paused.revision,
                               spec=schedules.Every(HOUR))
    assert (updated.state, updated.generation) == ("paused", info.generation + 1)
    assert dispatch("s")[0] is None


def test_pause_and_resume__refuse_the_wrong_state_and_bad_input_and_change_nothing(clock,
                                                                                   target):
    create("s", schedules.Every(TEN), target)
    with pytest.raises(ScheduleNotPaused):
        schedules.resume(SCOPE, "s")
    schedules.suspend(SCOPE, "s", "broken", actor="alice")
    with pytest.raises(ScheduleNotPausable) as err:
        schedules.pause(SCOPE, "s", "x")
    assert err.value.code == "DS146"
    create("t", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "t", "x")
    before = definition("t")
    with pytest.raises(InvalidCatchUp):
        schedules.resume(SCOPE, "t", catch_up="all")
    assert definition("t") == before


def test_delete__of_a_paused_schedule_clears_the_pause(clock, target):
    create("s", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "s", "x")
    deleted = schedules.delete(SCOPE, "s")
    assert (deleted.state, deleted.paused_at) == ("deleted", None)
    with pytest.raises(ScheduleDeleted):
        schedules.trigger(SCOPE, "s", "r1")
