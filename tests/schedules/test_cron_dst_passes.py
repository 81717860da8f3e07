"""Passes across real DST transitions: one Work per instant the documented policy defines —
no duplicate at the autumn repeat, none lost in the spring gap — whatever the pass times
(each due instant is passed a few seconds late, with extra passes in between that must
materialize nothing), in zones with a 1-hour, a 30-minute (Lord Howe) and a midnight
(Santiago) transition."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import create, occurrences, run_pass, works

pytestmark = pytest.mark.django_db

CASES = [  # zone, expression, dst_gap, dst_fold, a UTC instant a few hours before a transition
    ("Europe/London", "*/20 0-3 * * *", "shift", "first", "2030-03-30T22:00"),
    ("Europe/London", "30 1 * * *", "shift", "second", "2030-10-26T22:00"),
    ("Europe/London", "0,30 0-2 * * *", "skip", "first", "2030-03-30T22:00"),
    ("America/New_York", "*/30 1-2 * * *", "shift", "first", "2030-11-03T03:00"),
    ("Australia/Lord_Howe", "*/15 1-2 * * *", "shift", "first", "2030-04-06T12:00"),
    ("Australia/Lord_Howe", "15 2 * * *", "shift", "first", "2030-10-05T13:00"),
    ("America/Santiago", "0,30 0 * * *", "shift", "first", "2030-09-07T22:00"),
    ("America/Santiago", "30 23 * * *", "shift", "second", "2030-04-06T00:00"),
]
SPAN = timedelta(hours=8)


@pytest.mark.parametrize(("tz", "expression", "gap", "fold", "start"), CASES)
def test_one_work_per_policy_instant_across_the_transition(clock, target, tz, expression, gap,
                                                           fold, start):
    begin = datetime.fromisoformat(start).replace(tzinfo=UTC)
    clock.set(begin)
    spec = schedules.Cron(expression, tz, dst_gap=gap, dst_fold=fold)
    create("dst", spec, target, overlap="allow_all")
    ev = spec.evaluator()
    expected = [datetime.fromtimestamp(o.utc, UTC) for o in
                ev.upcoming(int(begin.timestamp()), 100) if o.utc <= (begin + SPAN).timestamp()]
    assert expected  # every case has instants on its transition night
    rnd = random.Random(f"{tz}|{expression}")
    for due in expected:
        before = due - timedelta(seconds=rnd.randint(1, 600))
        if before > clock.now:
            assert run_pass(clock, before).materialized == 0
        assert run_pass(clock, due + timedelta(seconds=rnd.randint(0, 30))).materialized == 1
        assert run_pass(clock, clock.now + timedelta(seconds=1)).materialized == 0
    run_pass(clock, begin + SPAN)
    assert [o[2] for o in occurrences("dst")] == expected
    assert [o[3] for o in occurrences("dst")] == expected
    assert len(works()) == len(expected)
