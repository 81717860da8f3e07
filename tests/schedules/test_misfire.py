"""docs/protocol/schedules.md rules S1 and S3: a cutoff at or behind the cursor changes nothing; a
missed range within the safety window is one recovery occurrence (run_once) or one skipped range
(skip); a jump beyond the window suspends with evidence, cursor unmoved, no Work."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import ReleaseRefused
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    SECOND,
    T0,
    TEN,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    rows,
    run_pass,
    works,
)

pytestmark = pytest.mark.django_db


def make_due_now(schedule_id: str) -> None:
    """Force the dispatch row due (as the owner), e.g. to run a pass at an earlier clock."""
    rows("update durable_schedule_dispatch set due_at = '-infinity' where schedule_id = %s"
         " returning 1", (schedule_id,))


@pytest.mark.parametrize("back", [0 * SECOND, 20 * MINUTE])
def test_cutoff__at_or_behind_the_cursor_changes_nothing(clock, target, back):
    create("s", schedules.Every(TEN), target)
    run_pass(clock, T0 + 30 * MINUTE)  # recovery [10, 30]; cursor 30
    before = (occurrences("s"), works(), definition("s")["cursor_utc"])
    assert before[2] == T0 + 30 * MINUTE
    make_due_now("s")
    counts = run_pass(clock, T0 + 30 * MINUTE - back)
    assert (counts.claimed, counts.noop, counts.materialized) == (1, 1, 0)
    assert (occurrences("s"), works(), definition("s")["cursor_utc"]) == before
    assert dispatch("s")[0] == T0 + 40 * MINUTE


def test_missed_range__run_once_is_one_recovery_occurrence_and_one_work(clock, target):
    create("s", schedules.Every(TEN), target)
    counts = run_pass(clock, T0 + 45 * MINUTE)
    assert (counts.recovered, counts.materialized) == (1, 1)
    [(generation, kind, first, last, state, work_id)] = occurrences("s")
    assert (kind, first, last, state) == ("recovery", T0 + TEN, T0 + 40 * MINUTE,
                                          "materialized")
    assert [w[0] for w in works()] == [work_id]
    assert definition("s")["cursor_utc"] == T0 + 40 * MINUTE
    assert dispatch("s")[0] == T0 + 50 * MINUTE
    event, _, detail = history("s")[-1]
    assert (event, detail["count"]) == ("materialized", 4)


def test_missed_range__skip_records_one_skipped_range_and_no_work(clock, target):
    create("s", schedules.Every(TEN), target, misfire="skip")
    counts = run_pass(clock, T0 + 45 * MINUTE)
    assert (counts.skipped, counts.materialized) == (1, 0)
    assert [o[1:5] for o in occurrences("s")] == [
        ("recovery", T0 + TEN, T0 + 40 * MINUTE, "skipped")]
    assert works() == []
    assert definition("s")["cursor_utc"] == T0 + 40 * MINUTE
    assert run_pass(clock, T0 + 50 * MINUTE).materialized == 1  # one instant: nominal again


def test_missed_range__exactly_the_safety_window_late_is_still_in_time(clock, target):
    create("s", schedules.Every(TEN), target, safety_window=35 * MINUTE)
    counts = run_pass(clock, T0 + 45 * MINUTE)  # earliest (T0+10) is 35 minutes late
    assert (counts.recovered, counts.suspended) == (1, 0)


def test_clock_jump__beyond_the_window_suspends_with_evidence_and_moves_nothing(clock, target):
    create("s", schedules.Every(TEN), target, safety_window=30 * MINUTE)
    counts = run_pass(clock, T0 + 45 * MINUTE)
    assert (counts.claimed, counts.suspended, counts.materialized) == (1, 1, 0)
    d = definition("s")
    assert (d["state"], d["suspension_reason"], d["cursor_utc"]) == (
        "suspended", "clock_jump", T0)
    evidence = d["suspension_evidence"]
    assert evidence["earliest"].startswith("2030-01-01T12:10:00")
    assert evidence["lateness_us"] == 35 * 60 * 10**6 and evidence["count"] == 4
    assert occurrences("s") == [] and works() == []
    assert dispatch("s")[0] is None
    assert history("s")[-1][0] == "suspended"
    with pytest.raises(ReleaseRefused):
        schedules.release_after_recovery(SCOPE, "s")
    assert definition("s")["cursor_utc"] == T0
    # The repair is a new generation: its cursor starts at its own acceptance.
    info = schedules.update(SCOPE, "s", expected_revision=d["revision"])
    assert (info.state, info.generation, info.cursor_utc) == ("active", 2, T0 + 45 * MINUTE)
    assert run_pass(clock, T0 + 55 * MINUTE).materialized == 1
    assert [o[0:3] for o in occurrences("s")] == [(2, "nominal", T0 + 55 * MINUTE)]
