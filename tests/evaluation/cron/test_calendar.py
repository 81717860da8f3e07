"""Day semantics of L, W, #, nL (Cronos CalendarHelper), checked against dates written by hand,
and the search cost: jumps, never a scan (counted calls, no timing)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron import calendar as cal
from durable_schedule.evaluation.cron.zones import Zone

START = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())  # a Thursday, excluded itself


def dates(expression: str, n: int = 5) -> list[str]:
    ev = Cron(expression).evaluator()
    return [datetime.fromtimestamp(o.utc, UTC).date().isoformat() for o in ev.upcoming(START, n)]


@pytest.mark.parametrize(("expression", "expected"), [
    # 1W: Sun 1 Feb -> Mon 2; Sun 1 Mar -> Mon 2; a Saturday 1st moves forward to Monday 3rd.
    ("0 0 1W * *", ["2026-02-02", "2026-03-02", "2026-04-01", "2026-05-01", "2026-06-01"]),
    ("0 0 1W 8 *", ["2026-08-03"]),
    # 31W: only months with a 31st; Sun 31 May -> Fri 29 (never into June).
    ("0 0 31W * *", ["2026-01-30", "2026-03-31", "2026-05-29", "2026-07-31", "2026-08-31"]),
    # 15W: Sun 15 Feb -> Mon 16; Sat 15 Aug -> Fri 14.
    ("0 0 15W * *", ["2026-01-15", "2026-02-16", "2026-03-16", "2026-04-15", "2026-05-15"]),
    ("0 0 15W 8 *", ["2026-08-14"]),
    ("0 0 LW * *", ["2026-01-30", "2026-02-27", "2026-03-31", "2026-04-30", "2026-05-29"]),
    ("0 0 L-2 * *", ["2026-01-29", "2026-02-26", "2026-03-29", "2026-04-28", "2026-05-29"]),
    # L-30: only 31-day months have such a day (the 1st); January's is the excluded start.
    ("0 0 L-30 * *", ["2026-03-01", "2026-05-01", "2026-07-01", "2026-08-01", "2026-10-01"]),
    ("0 0 L-1W * *", ["2026-01-30", "2026-02-27", "2026-03-30", "2026-04-29", "2026-05-29"]),
    ("0 0 * * 5L", ["2026-01-30", "2026-02-27", "2026-03-27", "2026-04-24", "2026-05-29"]),
    ("0 0 * * 6#3", ["2026-01-17", "2026-02-21", "2026-03-21", "2026-04-18", "2026-05-16"]),
    ("0 0 * * MON#5", ["2026-03-30", "2026-06-29", "2026-08-31", "2026-11-30", "2027-03-29"]),
    ("0 0 L 2 *", ["2026-02-28", "2027-02-28", "2028-02-29", "2029-02-28", "2030-02-28"]),
    ("0 0 29 2 *", ["2028-02-29", "2032-02-29", "2036-02-29", "2040-02-29", "2044-02-29"]),
    # AND of both day fields: Friday the 13th; the last day of the month if it is a Sunday.
    ("0 0 13 * FRI", ["2026-02-13", "2026-03-13", "2026-11-13", "2027-08-13", "2028-10-13"]),
    ("0 0 L * SUN", ["2026-05-31", "2027-01-31", "2027-02-28", "2027-10-31", "2028-04-30"]),
])
def test_day_specials_match_hand_written_dates(expression, expected):
    assert dates(expression, len(expected)) == expected


def test_never_matching_day_patterns_find_nothing_within_the_cycle():
    for expression in ("0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31W 2 *", "0 0 L-29 2 *"):
        assert Cron(expression).evaluator().next_after(START) is None


def test_a_ten_year_gap_is_a_few_jumps_not_a_scan(monkeypatch):
    # Monday 29 February: 2044 after 2016; one answer classifies one wall time and visits each
    # year's February once (<= 400 months within the Gregorian cycle), never minutes or days.
    calls = {"classify": 0, "candidates": 0}
    classify, candidates = Zone.classify, cal._candidate_days

    def counting_classify(self, wall):
        calls["classify"] += 1
        return classify(self, wall)

    def counting_candidates(p, y, m):
        calls["candidates"] += 1
        return candidates(p, y, m)

    monkeypatch.setattr(Zone, "classify", counting_classify)
    monkeypatch.setattr(cal, "_candidate_days", counting_candidates)
    ev = Cron("0 0 29 2 MON", "Europe/Berlin").evaluator()
    occ = ev.next_after(int(datetime(2016, 3, 1, tzinfo=UTC).timestamp()))
    assert datetime.fromtimestamp(occ.utc, UTC) == datetime(2044, 2, 28, 23, 0, tzinfo=UTC)
    assert calls["classify"] <= 2
    assert calls["candidates"] <= 30  # one February per year, plus the starting month


def test_every_second_over_ten_years_answers_each_instant_directly():
    ev = Cron("* * * * * *", "Europe/Berlin").evaluator()
    t = int(datetime(2036, 6, 1, 12, 0, 0, tzinfo=UTC).timestamp())
    assert ev.next_after(t).utc == t + 1
    assert ev.prev_at_or_before(t).utc == t


def test_next_and_prev_time_of_day_are_lexicographic():
    p = Cron("5,10 15,45 1,20 * * *").pattern
    assert cal.next_time(p, 0) == 1 * 3600 + 15 * 60 + 5
    assert cal.next_time(p, 1 * 3600 + 15 * 60 + 6) == 1 * 3600 + 15 * 60 + 10
    assert cal.next_time(p, 1 * 3600 + 15 * 60 + 11) == 1 * 3600 + 45 * 60 + 5
    assert cal.next_time(p, 20 * 3600 + 45 * 60 + 11) is None
    assert cal.prev_time(p, 20 * 3600) == 1 * 3600 + 45 * 60 + 10
    assert cal.prev_time(p, 1 * 3600 + 15 * 60 + 4) is None
