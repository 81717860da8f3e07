"""A cron window that starts one second before a spring-forward transition keeps the gap's
shifted run (the evaluator once searched from the gap's end and lost it)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import create, dispatch, occurrences, run_pass

pytestmark = pytest.mark.django_db

# Europe/Berlin 2030: 31 March 02:00 CET -> 03:00 CEST at 01:00Z.
TRANSITION = datetime(2030, 3, 31, 1, 0, tzinfo=UTC)


def test_a_window_from_one_second_before_the_gap_runs_the_shifted_instant(clock, target):
    # 01:59:59 CET and 02:59:59 (in the gap, so shifted to 03:00:00 CEST, the transition).
    clock.set(datetime(2030, 3, 31, 0, 59, 58, tzinfo=UTC))
    create("edge", schedules.Cron("59 59 1,2 * * *", "Europe/Berlin"), target,
           overlap="allow_all")
    run_pass(clock, datetime(2030, 3, 31, 0, 59, 59, tzinfo=UTC))
    # The cursor is now 00:59:59Z, one second before the transition; the next due is that.
    assert dispatch("edge")[0] == TRANSITION
    run_pass(clock, TRANSITION)
    firsts = [(o[1], o[2]) for o in occurrences("edge")]
    assert firsts == [("nominal", datetime(2030, 3, 31, 0, 59, 59, tzinfo=UTC)),
                      ("nominal", TRANSITION)]


def test_a_schedule_accepted_in_the_second_before_the_gap_is_due_at_its_end(clock, target):
    clock.set(datetime(2030, 3, 31, 0, 59, 59, 500000, tzinfo=UTC))
    create("late", schedules.Cron("30 2 * * *", "Europe/Berlin"), target)
    assert dispatch("late")[0] == TRANSITION
