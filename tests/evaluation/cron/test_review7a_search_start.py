"""A search may start at any second, including the very instant a clock springs forward.

The property test of test_dst_properties steps from one instant to the next, so a search never
started exactly at a gap's transition instant; there the evaluator read the wall time (the
gap's end) and searched on from it, missing the gap's wall times whose ``shift`` instant is
that very second. A window ``(t - 1, cutoff]`` -- a cursor at 01:59:59 -- then lost the
shifted run. Every start second near each transition must give the policy set's next and
previous instant."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from datetime import UTC, datetime

import pytest

from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron.zones import load
from tests.evaluation.cron.test_dst_properties import TRANSITIONS, brute_force

EXPRESSIONS = ["30 2 * * *", "59 1,2 * * *", "0,30 * * * *", "*/20 2 * * *", "45 1 * * *",
               "15 2 * * *", "0 0 * * *", "30 23 * * *", "* 2 * * *"]


def _transitions(tz: str, at: str) -> list[int]:
    start = int(datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp())
    return [t for t, _ in load(tz).changes(start, start + 2 * 86400)]


@pytest.mark.parametrize("gap", ["shift", "skip"])
@pytest.mark.parametrize("fold", ["first", "second"])
@pytest.mark.parametrize("where", TRANSITIONS, ids=lambda w: f"{w[0]}@{w[1]}")
def test_a_search_from_any_second_near_a_transition_finds_the_policy_set(where, gap, fold):
    tz, at = where
    for t in _transitions(tz, at):
        for expr in EXPRESSIONS:
            spec = Cron(expr, tz, dst_gap=gap, dst_fold=fold)
            ev = spec.evaluator()
            expected = brute_force(spec, t - 2 * 86400, t + 2 * 86400)
            for s in (*range(t - 3, t + 4), t - 3600, t + 1800, t + 3600):
                i = bisect_left(expected, s)
                want_next = expected[i] if i < len(expected) else None
                occ = ev.next_at_or_after(s)
                assert (occ.utc if occ else None) == want_next, (expr, s - t)
                j = bisect_right(expected, s) - 1
                want_prev = expected[j] if j >= 0 else None
                occ = ev.prev_at_or_before(s)
                assert (occ.utc if occ else None) == want_prev, (expr, s - t)
