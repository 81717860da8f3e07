"""A backfill never runs an instant a second time: an instant the schedule itself already ran
(its nominal, recovery or coalesced occurrence has Work) is covered by that occurrence, so a
backfill over it reports it as existing and creates nothing for it (docs/schedules.md
"Backfill", "Exactly one Work per occurrence")."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    occurrences,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def test_backfill__an_instant_the_schedule_ran_nominally_is_not_run_again(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="allow_all")
    run_pass(clock, T0 + TEN + MINUTE)  # 00:10 runs as a nominal occurrence
    assert [(o[1], o[2]) for o in occurrences("s")] == [("nominal", T0 + TEN)]
    done = schedules.backfill(SCOPE, "s", T0 + TEN, T0 + TEN, "bf")
    assert done.ran == []
    assert done.existing == [T0 + TEN]
    assert len(works()) == 1
    assert [(o[1], o[2]) for o in occurrences("s")] == [("nominal", T0 + TEN)]


def test_backfill__instants_inside_a_run_coalesced_range_are_not_run_again(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target)  # queue_one
    run_pass(clock, T0 + TEN + MINUTE)             # 00:10: W1
    run_pass(clock, T0 + 2 * TEN + MINUTE)         # 00:20: coalesced behind W1
    run_pass(clock, T0 + 3 * TEN + MINUTE)         # 00:30 joins it: [00:20, 00:30]
    w1 = works()[0][0]
    assert set_work_state(w1, "succeeded") == 1
    run_pass(clock, T0 + 3 * TEN + 2 * MINUTE)     # the coalesced occurrence runs: W2
    w2 = works()[1][0]
    assert set_work_state(w2, "succeeded") == 1
    before = (occurrences("s"), works())
    done = schedules.backfill(SCOPE, "s", T0 + 3 * TEN, T0 + 3 * TEN, "bf")
    assert done.ran == [] and done.existing == [T0 + 3 * TEN]
    assert (occurrences("s"), works()) == before


def test_backfill__an_instant_a_misfire_skip_dropped_can_still_be_run(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, misfire="skip", overlap="allow_all")
    run_pass(clock, T0 + 3 * TEN + MINUTE)  # 00:10-00:30 missed: one skipped range
    assert [o[4] for o in occurrences("s")] == ["skipped"]
    done = schedules.backfill(SCOPE, "s", T0 + 2 * TEN, T0 + 2 * TEN, "bf")
    assert [t for t, _ in done.ran] == [T0 + 2 * TEN]
    assert done.existing == []
