"""Property: repeated ``decide()`` passes over a cron spec dispose of every instant exactly
once across DST transitions (the misfire ranges count what the evaluator enumerates), the
cursor never moves back, and ``next_due`` is always the next instant after the new cursor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.evaluation.cron import Cron
from durable_schedule.evaluation.cron.spec import bind
from durable_schedule.evaluation.decision import SlotState, decide

EXPRESSIONS = ["*/20 * * * *", "30 2 * * *", "0,30 1-3 * * *", "15 2 * * *", "0 * * * *",
               "*/7 2 * * *", "0 0 * * *", "30 */15 * * * *"]
ZONES = [("Europe/Berlin", datetime(2026, 3, 28, 20, tzinfo=UTC)),
         ("Europe/Berlin", datetime(2026, 10, 24, 20, tzinfo=UTC)),
         ("Australia/Lord_Howe", datetime(2026, 4, 4, 10, tzinfo=UTC)),
         ("Antarctica/Troll", datetime(2026, 3, 28, 20, tzinfo=UTC)),
         ("America/Santiago", datetime(2026, 9, 5, 20, tzinfo=UTC))]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(EXPRESSIONS), st.sampled_from(ZONES),
       st.sampled_from(["shift", "skip"]), st.sampled_from(["first", "second"]),
       st.sampled_from(["run_once", "skip"]),
       st.lists(st.integers(0, 6 * 3600), min_size=1, max_size=12))
def test_passes_cover_every_cron_instant_once(expression, where, gap, fold, misfire, steps):
    tz, accepted = where
    spec = bind(Cron(expression, tz, dst_gap=gap, dst_fold=fold), "s", "id", accepted)
    cursor = now = accepted
    covered = 0
    for step in steps:
        now += timedelta(seconds=step)
        d = decide(spec, accepted, cursor, now, safety_window=timedelta(days=30),
                   misfire=misfire, overlap="queue_one", slot=SlotState(False))
        assert d.new_cursor >= cursor
        if d.action != "noop":
            assert d.action in ("nominal", "recovery", "skipped")
            assert cursor < d.first <= d.last <= now and d.new_cursor == d.last
            assert d.evidence["count_exact"] is True
            covered += d.count
        expected_next = spec.evaluator().next_after(int(d.new_cursor.timestamp()))
        assert d.next_due == datetime.fromtimestamp(expected_next.utc, UTC)
        cursor = d.new_cursor
    ev, count, s = spec.evaluator(), 0, int(accepted.timestamp()) + 1
    while (occ := ev.next_at_or_after(s)) is not None and occ.utc <= cursor.timestamp():
        count, s = count + 1, occ.utc + 1
    assert covered == count
