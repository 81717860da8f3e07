"""The DST policy as a set, checked by brute force on transition days: every UTC minute of a
two-day window is visited, its local wall time and pass read from zoneinfo directly, and the
instants the policy defines are collected; the evaluator must find exactly those (forwards and
backwards), and the window count must equal their number."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron import calendar as cal
from tests.evaluation.cron.test_differential import field

# (zone, a UTC instant a day before a transition)
TRANSITIONS = [
    ("Europe/Berlin", "2026-03-28T12:00"), ("Europe/Berlin", "2026-10-24T12:00"),
    ("America/New_York", "2026-03-07T12:00"), ("America/New_York", "2026-10-31T12:00"),
    ("Australia/Lord_Howe", "2026-04-03T12:00"), ("Australia/Lord_Howe", "2026-10-02T12:00"),
    ("America/Santiago", "2026-04-04T00:00"), ("America/Santiago", "2026-09-05T00:00"),
    ("Antarctica/Troll", "2026-03-28T12:00"), ("Antarctica/Troll", "2026-10-24T12:00"),
    ("Pacific/Apia", "2011-12-29T00:00"), ("Asia/Kolkata", "2026-03-28T12:00"),
]
SPAN = 2 * 86400


@st.composite
def minute_expressions(draw):
    return " ".join([
        draw(field(0, 59, star_weight=1)), draw(field(0, 23, star_weight=1)),
        draw(st.sampled_from(["*", "*", "1-31", "*/2", "L"])), "*",
        draw(st.sampled_from(["*", "*", "0-6", "SAT,SUN"])),
    ])


def _matches(pattern, wall: datetime) -> bool:
    return (cal.day_matches(pattern, wall.year, wall.month, wall.day)
            and wall.hour in pattern.hours and wall.minute in pattern.minutes)


def brute_force(spec: Cron, start: int, end: int) -> list[int]:
    zone = ZoneInfo(spec.tz)
    p = spec.pattern
    takes_first = p.interval or spec.dst_fold == "first"
    takes_second = p.interval or spec.dst_fold == "second"
    out: set[int] = set()
    prev_wall = None
    for u in range(start - start % 60, end + 1, 60):
        aware = datetime.fromtimestamp(u, UTC).astimezone(zone)
        wall = aware.replace(tzinfo=None)
        repeated = wall.replace(fold=0).replace(tzinfo=zone).utcoffset() != \
            wall.replace(fold=1).replace(tzinfo=zone).utcoffset()
        if _matches(p, wall) and (not repeated or (aware.fold == 0 and takes_first)
                                  or (aware.fold == 1 and takes_second)):
            out.add(u)
        if prev_wall is not None and wall - prev_wall > timedelta(minutes=1) and \
                spec.dst_gap == "shift":
            # Wall times skipped by the clock: any match among them runs at this instant.
            w = prev_wall + timedelta(minutes=1)
            while w < wall:
                if _matches(p, w):
                    out.add(u)
                    break
                w += timedelta(minutes=1)
        prev_wall = wall
    return sorted(t for t in out if start <= t <= end)


@settings(max_examples=120, deadline=None)
@given(minute_expressions(), st.sampled_from(TRANSITIONS),
       st.sampled_from(["shift", "skip"]), st.sampled_from(["first", "second"]))
def test_evaluator_finds_exactly_the_policy_set_on_transition_days(expr, where, gap, fold):
    tz, at = where
    spec = Cron(expr, tz, dst_gap=gap, dst_fold=fold)
    ev = spec.evaluator()
    start = int(datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp())
    expected = brute_force(spec, start, start + SPAN)
    got, s = [], start
    while True:
        occ = ev.next_at_or_after(s)
        if occ is None or occ.utc > start + SPAN:
            break
        got.append(occ.utc)
        s = occ.utc + 1
    assert got == expected
    backwards, s = [], start + SPAN
    while True:
        occ = ev.prev_at_or_before(s)
        if occ is None or occ.utc < start:
            break
        backwards.append(occ.utc)
        s = occ.utc - 1
    assert backwards[::-1] == expected
    window = ev.window(start - 1, start + SPAN)
    if expected:
        first, last, count, exact = window
        assert (first.utc, last.utc, count, exact) == (expected[0], expected[-1],
                                                       len(expected), True)
    else:
        assert window is None


def test_window_count_is_capped_and_says_so():
    from durable_schedule.evaluation.cron.evaluator import COUNT_LIMIT

    ev = Cron("* * * * * *").evaluator()
    t = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    first, last, count, exact = ev.window(t, t + 10 * 365 * 86400)
    assert (first.utc, last.utc) == (t + 1, t + 10 * 365 * 86400)
    assert (count, exact) == (COUNT_LIMIT, False)
    assert ev.window(t, t + 100)[2:] == (100, True)
