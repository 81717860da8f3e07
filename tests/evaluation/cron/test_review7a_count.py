"""``Evaluator.count``: the exact instant count of any window, equal to counting one by one."""

from __future__ import annotations

import bisect
from datetime import UTC, datetime

import pytest

from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron.zones import load
from tests.evaluation.cron.test_dst_properties import TRANSITIONS

EXPRESSIONS = ["* * * * * *", "*/7 * * * * *", "0 30 * * * *", "59 59 1,2 * * *", "15 2 * * *",
               "* 2 * * *", "*/5 1-3 * * *", "30 1 L * *", "0,30 * * * * *", "0 0 * * *"]


def one_by_one(ev, lo: int, hi: int) -> tuple[list[int], int | None]:
    """The instants in (lo, hi], one ``next_at_or_after`` at a time, and the first one after hi
    (None where the instants end)."""
    instants, s = [], lo + 1
    while (occ := ev.next_at_or_after(s)) is not None and occ.utc <= hi:
        instants.append(occ.utc)
        s = occ.utc + 1
    return instants, None if occ is None else occ.utc


@pytest.mark.parametrize("where", TRANSITIONS, ids=lambda w: f"{w[0]}@{w[1]}")
def test_count_equals_counting_one_by_one_around_every_transition(where):
    tz, at = where
    start = int(datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp())
    for t, _ in load(tz).changes(start, start + 2 * 86400):
        for expr in EXPRESSIONS:
            for gap in ("shift", "skip"):
                for fold in ("first", "second"):
                    ev = Cron(expr, tz, dst_gap=gap, dst_fold=fold).evaluator()
                    # Two days for the coarse expressions; the dense ones a few hours, so
                    # that counting one by one stays cheap.
                    wide = 86400 if expr.split()[0] in ("0", "15", "30", "0,30") else 3 * 3600
                    # Counted one by one once, over the widest window; each window inside it
                    # starts its own walk at lo + 1: where that first step lands on the wide
                    # walk's instant, the rest of its walk is the wide walk's (the same calls).
                    instants, after = one_by_one(ev, t - wide, t + wide)
                    for lo, hi in ((t - wide, t + wide), (t - 7187, t + 10793), (t - 1, t),
                                   (t - 2, t + 3601)):
                        first = ev.next_at_or_after(lo + 1)
                        i = bisect.bisect_right(instants, lo)
                        assert (None if first is None else first.utc) == (
                            instants[i] if i < len(instants) else after), (expr, gap, fold, lo)
                        n = bisect.bisect_right(instants, hi) - i
                        assert ev.count(lo, hi) == n, (expr, gap, fold)


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "Australia/Lord_Howe",
                                "Asia/Kathmandu", "Pacific/Apia"])
def test_every_second_is_one_instant_per_utc_second_over_a_year(tz):
    # A gap's wall seconds collapse into its end (a match), a repeat runs twice (interval).
    ev = Cron("* * * * * *", tz).evaluator()
    lo = int(datetime(2011, 6, 1, tzinfo=UTC).timestamp())
    assert ev.count(lo, lo + 365 * 86400) == 365 * 86400
    assert ev.count(lo, lo) == 0 and ev.count(lo, lo - 5) == 0


def test_count_stops_where_the_instants_end():
    ev = Cron("0 0 * * *").evaluator()
    end = int(datetime(9999, 12, 31, tzinfo=UTC).timestamp())
    assert ev.count(end - 10 * 86400 - 1, end + 10 * 86400) == 11
