"""docs/schedules.md "Backfill", "What never ran can be backfilled": a backfill over a range a
misfire skip dropped runs its instants (allow_all: all of them). Reviving the skipped range's
first instant re-recorded the rest of the range as skipped from the next instant -- the very
instant this backfill was about to run -- so its own insert found the identity taken and the
backfill died with a TypeError (nothing written, no DS code)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    SECOND,
    T0,
    TEN,
    create,
    occurrences,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def skipped_range(clock, target, overlap):
    """Every(10 min), misfire skip: 00:10 ran, 00:20-00:40 skipped as one range."""
    create("s", schedules.Every(TEN), target, overlap=overlap, misfire="skip",
           safety_window=timedelta(hours=1))
    run_pass(clock, T0 + TEN + SECOND)
    run_pass(clock, T0 + 40 * MINUTE + SECOND)
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")][-1] == \
        ("recovery", T0 + 20 * MINUTE, T0 + 40 * MINUTE, "skipped")


def test_backfill__allow_all_runs_every_instant_of_a_skipped_range(clock, target):
    skipped_range(clock, target, "allow_all")
    done = schedules.backfill(SCOPE, "s", T0 + 20 * MINUTE, T0 + 40 * MINUTE, "bf")
    assert [t for t, _ in done.ran] == [T0 + k * MINUTE for k in (20, 30, 40)]
    ran = [(o[1], o[2], o[3]) for o in occurrences("s") if o[5] is not None]
    assert ran[1:] == [("recovery", T0 + k * MINUTE, T0 + k * MINUTE) for k in (20, 30, 40)]
    assert not [o for o in occurrences("s") if o[4] == "skipped"]


def test_backfill__allow_all_part_of_a_skipped_range_keeps_the_rest_skipped(clock, target):
    skipped_range(clock, target, "allow_all")
    done = schedules.backfill(SCOPE, "s", T0 + 20 * MINUTE, T0 + 30 * MINUTE, "bf")
    assert [t for t, _ in done.ran] == [T0 + 20 * MINUTE, T0 + 30 * MINUTE]
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s") if o[4] == "skipped"] == \
        [("recovery", T0 + 40 * MINUTE, T0 + 40 * MINUTE, "skipped")]


def test_backfill__skip_of_instants_a_misfire_skip_dropped_counts_them_once(clock, target):
    """docs/schedules.md "Backfill": an instant skipped again is still counted once. Under
    overlap skip the backfill runs the range's first instant and skips the others again: they
    were counted by the misfire skip already."""
    skipped_range(clock, target, "skip")
    assert [set_work_state(w[0], "succeeded") for w in works()] == [1]  # 00:10's Work ended
    done = schedules.backfill(SCOPE, "s", T0 + 20 * MINUTE, T0 + 40 * MINUTE, "bf")
    assert [t for t, _ in done.ran] == [T0 + 20 * MINUTE]
    assert done.skipped == [T0 + 30 * MINUTE, T0 + 40 * MINUTE]
    assert schedules.get(SCOPE, "s").missed == {"misfire": 3}
