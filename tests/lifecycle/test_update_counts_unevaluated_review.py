"""Every skipped instant is counted: the instants of the replaced generation that no pass
evaluated before an ``update`` (processors behind, a pause, a suspension such as a clock jump)
never run -- the new generation starts at its acceptance and nothing is back-filled -- so the
update counts them in ``missed["superseded"]`` and names them in its history row
(docs/schedules.md "Missed instants")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    history,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def update(clock, at, **changes):
    clock.set(at)
    info = schedules.get(SCOPE, "s")
    return schedules.update(SCOPE, "s", expected_revision=info.revision, **changes)


def not_evaluated() -> dict | None:
    event, _actor, detail = history("s")[-1]
    assert event == "updated"
    return detail["not_evaluated"]


def test_update__counts_the_instants_no_pass_evaluated_before_it(clock, target):
    create("s", schedules.Every(TEN), target)
    run_pass(clock, T0 + TEN)
    info = update(clock, T0 + 3 * TEN + 5 * MINUTE, target=target)  # 12:20 and 12:30 not run
    assert info.missed == {"superseded": 2}
    assert not_evaluated() == {
        "first": "2030-01-01T12:20:00.000000+00:00",
        "last": "2030-01-01T12:30:00.000000+00:00",
        "count": 2,
    }
    again = update(clock, T0 + 3 * TEN + 6 * MINUTE, target=target)  # nothing due between
    assert again.missed == {"superseded": 2} and not_evaluated() is None


def test_update__counts_what_a_clock_jump_suspension_left_behind(clock, target):
    create("s", schedules.Every(TEN), target)
    run_pass(clock, T0 + TEN)
    set_work_state(works()[0][0], "succeeded")
    run_pass(clock, T0 + 4 * HOUR)  # 23 instants, the earliest over an hour late
    assert schedules.get(SCOPE, "s").suspension_reason == "clock_jump"
    info = update(clock, T0 + 4 * HOUR + MINUTE)  # the documented repair: re-issue
    assert (info.state, info.missed) == ("active", {"superseded": 23})
    assert not_evaluated()["count"] == 23


def test_update__while_paused_counts_the_paused_instants_and_resume_adds_nothing(clock, target):
    create("s", schedules.Every(TEN), target)
    run_pass(clock, T0 + TEN)
    schedules.pause(SCOPE, "s")
    info = update(clock, T0 + 6 * TEN + MINUTE, target=target)  # 12:20 .. 13:00 fell
    assert (info.state, info.missed) == ("paused", {"superseded": 5})
    clock.set(T0 + 6 * TEN + 2 * MINUTE)
    resumed = schedules.resume(SCOPE, "s", catch_up="skip")
    assert resumed.missed == {"superseded": 5}  # the new generation has none to skip yet


def test_update__of_a_completed_schedule_counts_nothing(clock, target):
    create("s", schedules.Every(TEN), target, end_at=T0 + TEN)
    run_pass(clock, T0 + TEN)
    set_work_state(works()[0][0], "succeeded")
    run_pass(clock, T0 + 2 * TEN)
    assert schedules.get(SCOPE, "s").state == "completed"
    info = update(clock, T0 + 5 * TEN, end_at=T0 + 10 * TEN)
    assert info.missed == {} and not_evaluated() is None


def test_update__end_at_limits_what_is_counted(clock, target):
    create("s", schedules.Every(TEN), target, overlap="allow_all", end_at=T0 + 3 * TEN)
    run_pass(clock, T0 + TEN)
    info = update(clock, T0 + timedelta(minutes=55), end_at=T0 + 10 * TEN)
    assert info.missed == {"superseded": 2}  # 12:20, 12:30; 12:40, 12:50 were past end_at
