"""Differential tests in zones with DST, around their real transitions (1990-2037).

Two references, both independent of our parser and evaluator:

* an **oracle of the documented policy** (docs/schedules.md "DST policy"): the field sets come
  from cronsim's parser, each matching local wall minute in the window is converted with
  ``zoneinfo`` (a wall time that exists once, one in a gap, one in a repeat), and the policy's
  rule for gaps (``shift``/``skip``) and repeats (interval: both passes; otherwise the
  ``dst_fold`` pass) is applied. Ours must find exactly that set, forwards and backwards.
* **croniter 7.0 and cronsim 2.8 on days without a transition**: away from a transition every
  reading of cron agrees, so ours must equal croniter (AND mode) on every instant whose local
  day has no offset change (disagreement class 2 is exactly the transition days).

Zones: Europe/London, America/New_York, Australia/Lord_Howe (30-minute DST),
America/Santiago (midnight transitions), Asia/Tehran (DST until 2022), Pacific/Apia (the
skipped 2011-12-30) and Africa/Casablanca (DST suspended each Ramadan: transitions both ways
several times a year). The windows start at a random second up to two days before a random
transition of the zone. Expressions are those of test_differential.py, minus the classes that
file excludes (one-value ranges, day-of-week steps reaching 7).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from croniter import croniter
from cronsim import CronSim
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron.evaluator import COUNT_LIMIT
from tests.evaluation.cron.test_differential import (
    DAYS,
    MONTHS,
    _dow_step_reaches_seven,
    _has_one_value_range,
    field,
)

ZONES = ["Europe/London", "America/New_York", "Australia/Lord_Howe", "America/Santiago",
         "Asia/Tehran", "Pacific/Apia", "Africa/Casablanca"]
SPAN = 4 * 86400
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _offset(zone: ZoneInfo, u: int) -> timedelta:
    return datetime.fromtimestamp(u, UTC).astimezone(zone).utcoffset()


@cache
def transitions(name: str) -> tuple[int, ...]:
    """Every UTC second 1990-2037 at which the zone's offset changes (6-hour scan, bisected)."""
    zone = ZoneInfo(name)
    lo = int((datetime(1990, 1, 1, tzinfo=UTC) - _EPOCH).total_seconds())
    hi = int((datetime(2037, 12, 31, tzinfo=UTC) - _EPOCH).total_seconds())
    out = []
    step = 6 * 3600
    u, off = lo, _offset(zone, lo)
    while u < hi:
        v = u + step
        voff = _offset(zone, v)
        if voff != off:
            a, b = u, v  # offset(a) == off, offset(b) != off
            while b - a > 1:
                m = (a + b) // 2
                if _offset(zone, m) == off:
                    a = m
                else:
                    b = m
            out.append(b)
        u, off = v, voff
    return tuple(out)


@st.composite
def expressions(draw):
    seconds = draw(st.booleans())
    parts = []
    if seconds:
        parts.append(draw(st.sampled_from(["0", "*/20", "15,45", "0-59/30", "7"])))
    parts.append(draw(field(0, 59, star_weight=2)))
    parts.append(draw(field(0, 23, star_weight=2)))
    parts.append(draw(field(1, 31, star_weight=6)))
    parts.append(draw(field(1, 12, MONTHS, base=1, star_weight=8)))
    parts.append(draw(field(0, 7, DAYS, star_weight=5)))
    return " ".join(parts), seconds


def _interval(expression: str, seconds: bool) -> bool:
    # Cronos's classification, read from the text: second, minute or hour has *, - or /.
    time_fields = expression.split()[: 3 if seconds else 2]
    return any(ch in f for f in time_fields for ch in "*-/")


def _transition_in(zone: ZoneInfo, lo: int, hi: int) -> int:
    """The UTC second in (lo, hi] at which the offset changes (it changes once there)."""
    off = _offset(zone, lo)
    while hi - lo > 1:
        m = (lo + hi) // 2
        if _offset(zone, m) == off:
            lo = m
        else:
            hi = m
    return hi


def oracle(expression: str, seconds: bool, tz: str, gap: str, fold: str,
           start: int, end: int) -> list[int]:
    """The instants in [start, end] the documented DST policy defines, from first principles."""
    sim = CronSim(expression, datetime(2000, 1, 1))
    secs = sorted(sim.seconds) if seconds else [0]
    weekdays = {d % 7 for d in sim.weekdays}
    interval = _interval(expression, seconds)
    zone = ZoneInfo(tz)
    out: set[int] = set()
    wall = datetime.fromtimestamp(start, UTC).astimezone(zone).replace(tzinfo=None)
    wall = wall.replace(second=0) - timedelta(hours=30)
    last = datetime.fromtimestamp(end, UTC).astimezone(zone).replace(tzinfo=None)
    last += timedelta(hours=30)
    while wall <= last:
        if (wall.month in sim.months and wall.day in sim.days
                and (wall.isoweekday() % 7) in weekdays and wall.hour in sim.hours
                and wall.minute in sim.minutes):
            d0, d1 = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
            u0 = int((d0 - _EPOCH).total_seconds())
            u1 = int((d1 - _EPOCH).total_seconds())
            back0 = datetime.fromtimestamp(u0, UTC).astimezone(zone).replace(tzinfo=None)
            back1 = datetime.fromtimestamp(u1, UTC).astimezone(zone).replace(tzinfo=None)
            if back0 == wall and back1 == wall:
                firsts, seconds_pass = min(u0, u1), max(u0, u1)
                if firsts == seconds_pass:
                    out.update(firsts + s for s in secs)
                else:  # a repeat: the whole minute exists twice (transitions are on minutes)
                    if interval or fold == "first":
                        out.update(firsts + s for s in secs)
                    if interval or fold == "second":
                        out.update(seconds_pass + s for s in secs)
            elif gap == "shift":  # the wall minute does not exist: run at the gap's end
                out.add(_transition_in(zone, min(u0, u1) - 1, max(u0, u1)))
        wall += timedelta(minutes=1)
    return sorted(t for t in out if start <= t <= end)


@st.composite
def windows(draw):
    tz = draw(st.sampled_from(ZONES))
    ts = transitions(tz)
    t = ts[draw(st.integers(0, len(ts) - 1))]
    return tz, t - draw(st.integers(0, 2 * 86400))


def _clean(expression: str, seconds: bool) -> bool:
    return not _has_one_value_range(expression) and not _dow_step_reaches_seven(expression,
                                                                                seconds)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(SETTINGS, max_examples=40)
@given(expressions(), windows(), st.sampled_from(["shift", "skip"]),
       st.sampled_from(["first", "second"]))
def test_evaluator_is_the_documented_policy_around_real_transitions(expr, where, gap, fold):
    expression, seconds = expr
    assume(_clean(expression, seconds))
    tz, start = where
    end = start + SPAN
    expected = oracle(expression, seconds, tz, gap, fold, start, end)
    ev = Cron(expression, tz, dst_gap=gap, dst_fold=fold).evaluator()
    got, s = [], start
    while (occ := ev.next_at_or_after(s)) is not None and occ.utc <= end:
        got.append(occ.utc)
        s = occ.utc + 1
    assert got == expected
    back, s = [], end
    while (occ := ev.prev_at_or_before(s)) is not None and occ.utc >= start:
        back.append(occ.utc)
        s = occ.utc - 1
    assert back[::-1] == expected
    window = ev.window(start - 1, end)
    if expected:
        assert window[0].utc == expected[0] and window[1].utc == expected[-1]
        n = len(expected)  # counts past COUNT_LIMIT are reported as "at least" (documented)
        assert window[2:] == (min(n, COUNT_LIMIT), n <= COUNT_LIMIT)
    else:
        assert window is None


def _transition_day(zone: ZoneInfo, u: int) -> bool:
    # Conservatively: within two days of a transition (a local day spans at most about 26
    # hours either side of an instant on it, also across Apia's skipped day).
    return any(abs(t - u) <= 2 * 86400 for t in transitions(zone.key))


@SETTINGS
@given(expressions(), windows())
def test_agrees_with_croniter_and_cronsim_away_from_transition_days(expr, where):
    expression, seconds = expr
    assume(_clean(expression, seconds))
    tz, start = where
    zone = ZoneInfo(tz)
    start -= 5 * 86400  # windows begin days before the transition and run through it
    ev = Cron(expression, tz).evaluator()
    mine = [o.utc for o in ev.upcoming(start, 8)]
    assume(len(mine) == 8 and mine[-1] - start < 400 * 86400)
    begin = datetime.fromtimestamp(start, UTC).astimezone(zone)
    it = croniter(expression, begin, day_or=False, second_at_beginning=seconds)
    theirs = []
    while not theirs or theirs[-1] < mine[-1]:
        theirs.append(int((it.get_next(datetime) - _EPOCH).total_seconds()))
    dom, dow = expression.split()[(3 if seconds else 2)::2][:2]
    sim = None if not dom.startswith("*") and not dow.startswith("*") else \
        CronSim(expression, begin)
    sims = []
    while sim is not None and (not sims or sims[-1] < mine[-1]):
        sims.append(int((next(sim) - _EPOCH).total_seconds()))
    # Only instants on days without a transition are compared (disagreement class 2).
    away = [u for u in mine if not _transition_day(zone, u)]
    assert away == [u for u in theirs if u <= mine[-1] and not _transition_day(zone, u)]
    if sim is not None:
        assert away == [u for u in sims if u <= mine[-1] and not _transition_day(zone, u)]


def test_the_oracle_sees_the_documented_worked_examples():
    # The oracle itself against rows of docs/schedules.md (Europe/London, 2026: 29 March
    # 01:00 GMT -> 02:00 BST, 25 October 02:00 BST -> 01:00 GMT) and Pacific/Apia's lost day.
    def at(*a):
        return int((datetime(*a, tzinfo=UTC) - _EPOCH).total_seconds())

    spring = at(2026, 3, 28, 12)
    assert oracle("30 1 * * *", False, "Europe/London", "shift", "first", spring,
                  spring + 2 * 86400) == [at(2026, 3, 29, 1), at(2026, 3, 30, 0, 30)]
    assert oracle("30 1 * * *", False, "Europe/London", "skip", "first", spring,
                  spring + 2 * 86400) == [at(2026, 3, 30, 0, 30)]
    autumn = at(2026, 10, 24, 12)
    assert oracle("30 1 * * *", False, "Europe/London", "shift", "first", autumn,
                  autumn + 86400) == [at(2026, 10, 25, 0, 30)]
    assert oracle("30 1 * * *", False, "Europe/London", "shift", "second", autumn,
                  autumn + 86400) == [at(2026, 10, 25, 1, 30)]
    assert oracle("*/30 1 * * *", False, "Europe/London", "shift", "first", autumn,
                  autumn + 86400) == [at(2026, 10, 25, 0), at(2026, 10, 25, 0, 30),
                                      at(2026, 10, 25, 1), at(2026, 10, 25, 1, 30)]
    apia = at(2011, 12, 29)
    assert oracle("0 12 * * *", False, "Pacific/Apia", "shift", "first", apia,
                  apia + 2 * 86400) == [at(2011, 12, 29, 22), at(2011, 12, 30, 10),
                                        at(2011, 12, 30, 22)]
