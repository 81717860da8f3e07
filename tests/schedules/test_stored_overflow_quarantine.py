"""docs/reliability.md "Batches": a stored row this code cannot turn into Work is quarantined
(suspended ``unevaluable`` with a DS code as evidence) and the pass goes on. Two hand-edited
stored values used to overflow a bigint column in the dispose phase instead -- a bare DataError,
the pass raising at its end and the schedule failing again on every pass:

* a generation's jitter so long (past 2**63 microseconds, about 292,000 years) that its offset
  can pass the bigint range of the occurrence's ``jitter_us``;
* a per-cause ``missed`` count edited near the bigint limit (or to a value that is no count),
  which the next skipped range cannot add to."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    SECOND,
    T0,
    TEN,
    at,
    create,
    definition,
    rows,
    run_pass,
    works,
)

pytestmark = pytest.mark.django_db

BIGINT_MAX = 2**63 - 1
BATCHES = pytest.mark.parametrize("batch_size", [1, 100], ids=["single-step", "batched"])


def plant_jitter(schedule_id: str, jitter) -> None:
    """Generation 2 copies 1 with the stored ``jitter`` (generations are append-only)."""
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by, jitter) select scope_id, schedule_id, 2, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, '', %s::interval from durable_schedule_generation"
         " where scope_id = %s and schedule_id = %s returning id", (jitter, SCOPE, schedule_id))
    rows("update durable_schedule_definition set active_generation = 2"
         " where scope_id = %s and schedule_id = %s returning id", (SCOPE, schedule_id))


def assert_quarantined(schedule_id: str, code: str) -> dict:
    bad = definition(schedule_id)
    assert (bad["state"], bad["suspension_reason"]) == ("suspended", "unevaluable"), bad
    evidence = bad["suspension_evidence"]
    if isinstance(evidence, str):
        evidence = json.loads(evidence)
    assert evidence["code"] == code, evidence
    return evidence


@BATCHES
@pytest.mark.parametrize("jitter", ["300000 years", "1000000 years", "100000000 years"],
                         ids=["past-bigint", "far-past-bigint", "past-timedelta"])
def test_a_stored_jitter_whose_offset_cannot_be_stored__is_quarantined_and_the_others_run(
        clock, target, batch_size, jitter):
    for n in range(4):
        create(f"s{n}", schedules.Every(HOUR), target)
    plant_jitter("s1", jitter)
    counts = run_pass(clock, T0 + HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.materialized, counts.suspended) == (4, 3, 1), counts
    assert len(works()) == 3
    evidence = assert_quarantined("s1", "DS149")
    assert evidence["context"]["phase"] == "evaluate"
    assert rows("select count(*) from durable_schedule_occurrence where schedule_id = 's1'"
                ) == [(0,)]
    # The next pass does not fail on it either: it stays suspended, the others go on (their
    # first Work still holds the slot, so their next instant is coalesced).
    counts = run_pass(clock, T0 + 2 * HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.coalesced, counts.suspended) == (3, 3, 0), counts


@BATCHES
@pytest.mark.parametrize("stored", [BIGINT_MAX, 10**30, "many", -1],
                         ids=["bigint-max", "past-bigint", "not-a-number", "negative"])
def test_a_stored_missed_count_that_cannot_be_added_to__is_quarantined_and_the_others_run(
        clock, target, batch_size, stored):
    for n in range(4):
        create(f"s{n}", schedules.Every(TEN), target, misfire="skip")
    run_pass(clock, at(10), batch_size=batch_size)  # each Work stays pending: the slot is busy
    rows("update durable_schedule_definition set missed = %s::jsonb"
         " where scope_id = %s and schedule_id = 's1' returning id",
         (json.dumps({"misfire": stored}), SCOPE))
    counts = run_pass(clock, at(35), batch_size=batch_size)  # 12:20 and 12:30 found late
    assert (counts.claimed, counts.skipped, counts.suspended) == (4, 3, 1), counts
    assert_quarantined("s1", "DS173")
    # Nothing written for it: the counts as stored, no skipped occurrence, the cursor kept.
    assert json.loads(definition("s1")["missed"]) == {"misfire": stored}
    assert rows("select count(*) from durable_schedule_occurrence where schedule_id = 's1'"
                " and state = 'skipped'") == [(0,)]
    assert definition("s1")["cursor_utc"] == at(10)
    assert json.loads(definition("s2")["missed"])["misfire"] >= 1


@BATCHES
def test_a_stored_safety_window_past_the_longest_timedelta__is_read_and_the_schedule_runs(
        clock, target, batch_size):
    # '100000000 years' is a valid PostgreSQL interval that no Python timedelta holds: the row
    # failed to read (lock phase) on every pass. Read as 999999999 days it still reaches past
    # the supported UTC range, so the schedule behaves exactly as stored: it runs.
    for n in range(3):
        create(f"s{n}", schedules.Every(HOUR), target)
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by) select scope_id, schedule_id, 2, kind, spec,"
         " accepted_at_utc, target, overlap_policy, misfire_policy, '100000000 years',"
         " evaluator_version, '' from durable_schedule_generation"
         " where scope_id = %s and schedule_id = 's1' returning id", (SCOPE,))
    rows("update durable_schedule_definition set active_generation = 2"
         " where scope_id = %s and schedule_id = 's1' returning id", (SCOPE,))
    counts = run_pass(clock, T0 + HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.materialized, counts.suspended) == (3, 3, 0), counts
    assert definition("s1")["state"] == "active"
    assert schedules.get(SCOPE, "s1").safety_window == timedelta(days=999999999)


@BATCHES
@pytest.mark.parametrize("column", ["cursor_utc", "resumed_at", "end_at"])
def test_a_stored_timestamp_past_year_9999__is_quarantined_and_the_others_run(
        clock, target, batch_size, column):
    # A valid PostgreSQL timestamp no Python datetime holds: the definition row failed to read
    # (psycopg DataError, lock phase) on every pass, and nothing quarantined it.
    for n in range(3):
        create(f"s{n}", schedules.Every(HOUR), target)
    if column == "end_at":
        rows("insert into durable_schedule_generation (scope_id, schedule_id, generation,"
             " kind, spec, accepted_at_utc, target, overlap_policy, misfire_policy,"
             " safety_window, evaluator_version, created_by, end_at) select scope_id,"
             " schedule_id, 2, kind, spec, accepted_at_utc, target, overlap_policy,"
             " misfire_policy, safety_window, evaluator_version, '', '20000-01-01'"
             " from durable_schedule_generation where scope_id = %s and schedule_id = 's1'"
             " returning id", (SCOPE,))
        rows("update durable_schedule_definition set active_generation = 2"
             " where scope_id = %s and schedule_id = 's1' returning id", (SCOPE,))
    else:
        rows(f"update durable_schedule_definition set {column} = '20000-01-01'"
             " where scope_id = %s and schedule_id = 's1' returning id", (SCOPE,))
    counts = run_pass(clock, T0 + HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.materialized, counts.suspended) == (3, 2, 1), counts
    state = rows("select state, suspension_reason, suspension_evidence->>'code'"
                 " from durable_schedule_definition where scope_id = %s"
                 " and schedule_id = 's1'", (SCOPE,))
    assert state == [("suspended", "unevaluable", "DS174")]
    assert rows("select count(*) from durable_schedule_history where schedule_id = 's1'"
                " and event = 'suspended'") == [(1,)]
    counts = run_pass(clock, T0 + 2 * HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.suspended) == (2, 0), counts
