"""An update whose generation could never run is refused like one whose ``end_at`` lies in the
past: when ``max_runs`` (kept or given) leaves no run, counting the runs of every generation,
``update`` raises ``ScheduleNeverFires`` (DS117) and writes nothing, instead of re-arming a
schedule that the next pass completes again without a run, and showing a next instant that
never comes (docs/schedules.md "Bounds and limits")."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import ScheduleNeverFires
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    run_pass,
)

pytestmark = pytest.mark.django_db


def _two_runs(clock, target, **kwargs):
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="allow_all", **kwargs)
    run_pass(clock, T0 + TEN + MINUTE)
    run_pass(clock, T0 + 2 * TEN + MINUTE)
    assert [o[4] for o in occurrences("s")] == ["materialized", "materialized"]


def _unchanged():
    d = definition("s")
    return (d["revision"], d["state"], d["active_generation"], dispatch("s"), history("s"),
            occurrences("s"))


def test_update__of_a_schedule_completed_by_max_runs_keeping_the_bound_is_refused(clock, target):
    _two_runs(clock, target, max_runs=2)
    info = schedules.get(SCOPE, "s")
    assert info.state == "completed"
    before = _unchanged()
    with pytest.raises(ScheduleNeverFires) as refused:
        schedules.update(SCOPE, "s", expected_revision=info.revision,
                         spec=schedules.Every(5 * MINUTE, anchor=T0))
    assert refused.value.code == "DS117"
    assert _unchanged() == before
    # Raising the bound is the repair: one more run allowed.
    again = schedules.update(SCOPE, "s", expected_revision=info.revision, max_runs=3)
    assert again.state == "active" and again.next_nominal_utc is not None


def test_update__lowering_max_runs_below_the_runs_so_far_is_refused(clock, target):
    _two_runs(clock, target, max_runs=5)
    info = schedules.get(SCOPE, "s")
    assert info.state == "active"
    before = _unchanged()
    for bound in (1, 2):
        with pytest.raises(ScheduleNeverFires):
            schedules.update(SCOPE, "s", expected_revision=info.revision, max_runs=bound)
        assert _unchanged() == before
    assert schedules.update(SCOPE, "s", expected_revision=info.revision, max_runs=3).state == \
        "active"


def test_update__a_pending_run_it_supersedes_does_not_use_up_max_runs(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, max_runs=2)  # queue_one
    run_pass(clock, T0 + TEN + MINUTE)        # run 1: W1, still running
    run_pass(clock, T0 + 2 * TEN + MINUTE)    # run 2: a pending coalesced occurrence
    assert [(o[1], o[4]) for o in occurrences("s")] == [("nominal", "materialized"),
                                                        ("coalesced", "pending")]
    info = schedules.suspend(SCOPE, "s", "incident", actor="ops")
    again = schedules.update(SCOPE, "s", expected_revision=info.revision)  # the re-issue
    assert again.state == "active"
    assert [(o[1], o[4]) for o in occurrences("s")] == [("nominal", "materialized"),
                                                        ("coalesced", "superseded")]
