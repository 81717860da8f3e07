"""docs/reliability.md "Batches" / docs/protocol/runner.md: a stored row this code cannot turn
into Work is quarantined and the pass goes on. A generation whose stored target carries a
``deadline_after_us`` beyond the timedelta range (written by hand: generations are append-only,
so a new one is planted) raised a bare OverflowError, which ended the whole pass: the other
due schedules of the scope, claimed behind it, never progressed, pass after pass."""

from __future__ import annotations

import json

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    SECOND,
    T0,
    create,
    definition,
    one,
    rows,
    run_pass,
    works,
)

pytestmark = pytest.mark.django_db


def plant_target(schedule_id: str, **fields) -> None:
    """A generation 2 whose stored target has ``fields`` replaced, made active."""
    stored = json.loads(one("select target::text from durable_schedule_generation"
                            " where scope_id = %s and schedule_id = %s",
                            (SCOPE, schedule_id))[0])
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by) select scope_id, schedule_id, 2, kind, spec,"
         " accepted_at_utc, %s::jsonb, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, '' from durable_schedule_generation"
         " where scope_id = %s and schedule_id = %s returning id",
         (json.dumps({**stored, **fields}), SCOPE, schedule_id))
    rows("update durable_schedule_definition set active_generation = 2"
         " where scope_id = %s and schedule_id = %s returning id", (SCOPE, schedule_id))


@pytest.mark.parametrize("batch_size", [1, 100], ids=["single-step", "batched"])
def test_deadline_past_the_timedelta_range__is_quarantined_and_the_others_run(
        clock, target, batch_size):
    for n in range(4):
        create(f"s{n}", schedules.Every(HOUR), target)
    plant_target("s1", deadline_after_us=10**30)
    counts = run_pass(clock, T0 + HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.materialized, counts.suspended) == (4, 3, 1), counts
    assert len(works()) == 3
    bad = definition("s1")
    assert (bad["state"], bad["suspension_reason"]) == ("suspended", "unevaluable")
    assert bad["suspension_evidence"]["context"]["refused"] == "stored_target"
