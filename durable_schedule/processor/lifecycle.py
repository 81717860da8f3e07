"""The processor's lifecycle hooks (docs/schedules.md "Lifecycle"): what a pass reads and writes
for bounds, pause/resume lateness, jitter and missed-instant accounting. The rules are the pure
functions of ``evaluation/bounds.py``, ``evaluation/jitter.py`` and ``evaluation/overlap.py``;
this module only gathers their inputs from the locked rows and writes their results, so the
single-schedule step and the batched pass call the same few functions.

The hooks a pass makes, all in ``step.py``: ``decide_inputs`` beside ``decide()``'s slot
arguments; ``jitter_offset`` for a new occurrence row (and the Work's due time through
``bridge(due_at=...)``); ``count_missed`` after a skipped range is written. A batched pass
gives the same three to its shared evaluation function and leaves the shapes it does not write
set-based (a skip, a completion, a jittered nominal occurrence) to the single step.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from durable_schedule.errors import StoredCountOutOfRange
from durable_schedule.evaluation import jitter as jittering
from durable_schedule.evaluation.bounds import Bounds
from durable_schedule.schedules.records import Definition
from durable_schedule.store.sqlfiles import query

QUERIES = "lifecycle_queries.sql"


def run_lifecycle(cur, name: str, params: dict[str, Any]):
    """Execute one named query of ``lifecycle_queries.sql``; returns the cursor."""
    cur.execute(query(QUERIES, name), params)
    return cur


def bounds_of(d: Definition) -> Bounds:
    return Bounds(start_at=d.start_at, end_at=d.end_at, max_runs=d.max_runs)


def decide_inputs(cur, d: Definition) -> dict[str, Any]:
    """The lifecycle arguments of ``decide()`` for the locked definition ``d``. The run count
    is read only when the generation has ``max_runs`` (one indexed count, under the definition
    lock, so no concurrent pass of this schedule can change it)."""
    runs = 0
    if d.max_runs is not None:
        runs = run_lifecycle(cur, "count_runs", {"scope_id": d.scope_id,
                                       "schedule_id": d.schedule_id}).fetchone()[0]
    return {"bounds": bounds_of(d), "runs": runs, "late_from": d.resumed_at}


def buffered_count(cur, d: Definition) -> int:
    """``buffer_all``: the buffered occurrences of the active generation waiting to run (0 for
    any other policy, without a query)."""
    if d.overlap != "buffer_all":
        return 0
    return run_lifecycle(cur, "count_buffered", {
        "scope_id": d.scope_id, "schedule_id": d.schedule_id,
        "generation": d.generation}).fetchone()[0]


def coalesced_count(cur, d: Definition) -> int:
    """``queue_one``: 1 when the active generation's pending coalesced occurrence waits to run,
    else 0 (0 for any other policy, without a query)."""
    if d.overlap != "queue_one":
        return 0
    return run_lifecycle(cur, "count_coalesced", {
        "scope_id": d.scope_id, "schedule_id": d.schedule_id,
        "generation": d.generation}).fetchone()[0]


def jitter_offset(d: Definition, kind: str, first: datetime) -> int | None:
    """The persisted jitter offset of a new occurrence (None: the generation has no jitter).
    Only nominal occurrences are jittered: recovery and coalesced ones are late already."""
    if d.jitter is None or kind != "nominal":
        return None
    return jittering.offset_us(d.jitter, d.scope_id, d.schedule_id, d.generation, kind, first)


def count_missed(cur, d: Definition, cause: str, count: int, now: datetime) -> None:
    """Add ``count`` skipped instants under ``cause`` (misfire, overlap, paused)."""
    if count <= 0:
        return
    _check_missed(d, cause, count)
    run_lifecycle(cur, "count_missed", {"scope_id": d.scope_id, "schedule_id": d.schedule_id,
                              "cause": cause, "count": count, "now": now})
    if cur.rowcount != 1:
        raise RuntimeError("missed-instant count matched no row under the definition lock")


#: The largest count the bigint cast of "count missed" holds.
BIGINT_MAX = 2**63 - 1


def _check_missed(d: Definition, cause: str, count: int) -> None:
    """DS173 (quarantined) unless the stored counts are an object whose ``cause`` count is a
    non-negative integer with room for ``count`` more: the statement's bigint cast otherwise
    fails (a DataError) on every pass that skips, and the schedule is never quarantined."""
    missed = d.missed if d.missed is not None else {}
    stored = missed.get(cause, 0) if isinstance(missed, dict) else None
    if type(stored) is not int or not 0 <= stored <= BIGINT_MAX - count:
        raise StoredCountOutOfRange(
            "the stored missed-instant count cannot be added to: it is no count, or the "
            "skipped range would take it past the bigint range", reason="missed_out_of_range",
            cause=cause, stored=json.dumps(missed)[:200], count=count)


def revived_occupant(cur, d: Definition) -> Any:
    """The Work id of a backfilled run that holds the slot behind the schedule's latest linked
    occurrence, or None (docs/schedules.md "Backfill": its Work occupies the slot like any
    other). Only a backfill that revived a skipped occurrence links an occurrence older than
    the latest linked one, and a skipped occurrence exists only where ``missed`` counted it
    (the counts only grow): a schedule that never skipped reads nothing more. Call it when the
    latest linked occurrence's Work is terminal (or there is none); locks the Work FOR SHARE,
    like the slot read."""
    if not d.missed or (isinstance(d.missed, dict) and not any(d.missed.values())):
        return None  # (stored counts that are no object, written by hand: read the slot)
    row = run_lifecycle(cur, "lock_revived_slot", {"scope_id": d.scope_id,
                                                   "schedule_id": d.schedule_id}).fetchone()
    return None if row is None else row[0]
