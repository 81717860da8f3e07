"""Row access shared by the schedule API and the processor (not public API).

Thin functions over the named queries of ``store/sql/schedule_queries.sql``; every one takes the
cursor of a transaction that is already scoped (``store.transactions.scoped`` / ``routed``), so
row-level security admits the current scope only. No business rule lives here: the API and the
processor decide, these functions read and write, and every guarded write reports whether its
``WHERE`` matched (docs/protocol/conventions.md rule C5).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.db import DataError as DjangoDataError

from durable_schedule.errors import (
    SchemaMissing,
    UnevaluableGeneration,
    UnreadableStoredRow,
    alias_of,
)
from durable_schedule.evaluation.isotext import iso_us
from durable_schedule.evaluation.timeline import ScheduleSpec, spec_from_json
from durable_schedule.frozen import maker
from durable_schedule.store.sqlfiles import query

QUERIES = "schedule_queries.sql"

#: Work states that no longer occupy the schedule-wide slot (docs/protocol/schedules.md rule S4).
TERMINAL_WORK_STATES = frozenset({"succeeded", "failed", "expired", "canceled"})


def statement(name: str) -> str:
    """The text of one named query of ``schedule_queries.sql`` (to send it in a pipeline)."""
    return query(QUERIES, name)


def run(cur, name: str, params: dict[str, Any] | None = None):
    """Execute one named query of ``schedule_queries.sql``; returns the cursor."""
    cur.execute(query(QUERIES, name), params or {})
    return cur


def to_json(value: Any) -> str:
    """The canonical JSON text written into jsonb columns (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class Fences:
    """The fence rows, read ``FOR SHARE`` (docs/protocol/storage.md)."""

    runtime_epoch: int
    schema_version: int
    compatibility_floor: int
    scope_generation: int
    routing_id: int
    clock: datetime  # durable_schedule_clock('clock') sampled by the same statement


@dataclass(frozen=True)
class Definition:
    """A definition row joined with its active generation (``kind`` None: generation missing)."""

    id: int
    scope_id: str
    schedule_id: str
    state: str
    revision: int
    generation: int
    runtime_epoch: int
    scope_generation: int
    cursor_utc: datetime
    suspension_reason: str | None
    suspension_evidence: dict[str, Any] | None
    suspended_at: datetime | None
    created_at: datetime
    updated_at: datetime
    kind: str | None
    spec_json: Any
    accepted_at_utc: datetime | None
    target_json: Any
    overlap: str | None
    misfire: str | None
    safety_window: timedelta | None
    evaluator_version: str | None
    created_by: str | None
    paused_at: datetime | None = None
    paused_by: str | None = None
    pause_note: str | None = None
    resumed_at: datetime | None = None
    missed: dict[str, int] | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_runs: int | None = None
    jitter: timedelta | None = None
    buffer_limit: int | None = None

    def spec(self) -> ScheduleSpec:
        """The stored spec, strictly re-validated (DS114 for a missing or tampered generation)."""
        if self.kind is None:
            raise UnevaluableGeneration(
                "the active generation row is missing", reason="generation_missing",
                generation=self.generation)
        return spec_from_json(self.kind, self.spec_json, self.evaluator_version)


_make_definition = maker(Definition)


def _definition(scope_id: str, schedule_id: str, row, *, generation_json=None) -> Definition:
    """``generation_json``: how to parse the generation's spec and target texts (default
    ``json.loads``); the batched pass shares one parse between the schedules of one spec or
    target (the values are read, never mutated)."""
    generation_json = generation_json or _from_json
    # Every field in declaration order (durable_schedule/frozen.py: the Definition its own
    # constructor would build, at a third of the cost; one per definition row read).
    return _make_definition(
        row[0], scope_id, schedule_id, row[1], row[2],  # id, scope, schedule, state, revision
        row[3], row[4], row[5], row[6],  # generation, runtime epoch, scope generation, cursor
        row[7], _from_json(row[8]), row[9],  # suspension reason, evidence, suspended_at
        row[10], row[11], row[12],  # created_at, updated_at, kind
        generation_json(row[13]), row[14],  # spec, accepted_at_utc
        generation_json(row[15]), row[16], row[17],  # target, overlap, misfire
        row[18], row[19], row[20],  # safety window, evaluator version, created_by
        row[22], row[23], row[24], row[25],  # paused_at, paused_by, pause_note, resumed_at
        _from_json(row[26]) or {}, row[27], row[28], row[29],  # missed, start, end, max_runs
        row[30],  # jitter
        # Not every query reads it (the batched pass leaves buffer_all to the single step).
        row[31] if len(row) > 31 else None,  # buffer_limit
    )


def transaction_clock(cur) -> datetime:
    return run(cur, "transaction_clock").fetchone()[0]


def lock_fences(cur, scope_id: str) -> Fences:
    row = run(cur, "lock_fences", {"scope_id": scope_id}).fetchone()
    if row is None:
        # scoped()/routed() create or find the scope row before this runs; a missing row means
        # the store row is missing (an unmigrated or damaged store).
        raise SchemaMissing("the store row or the scope row is missing", scope=scope_id,
                            using=alias_of(cur))
    return Fences(*row)


def lock_definition(cur, scope_id: str, schedule_id: str) -> Definition | None:
    """The definition and its active generation, the definition row locked FOR UPDATE.

    A stored value the driver cannot load (a timestamp outside years 1-9999, written by hand)
    raises ``UnreadableStoredRow`` (DS174, an unevaluable generation): the pass quarantines the
    schedule through :func:`lock_definition_key` instead of failing on it every pass."""
    key = {"scope_id": scope_id, "schedule_id": schedule_id}
    try:
        row = run(cur, "lock_definition", key).fetchone()
    except (DjangoDataError, psycopg.DataError) as exc:
        raise UnreadableStoredRow(
            "a stored value of the schedule cannot be read: "
            + (str(exc).splitlines() or [""])[0][:200], reason="unreadable_row") from exc
    return None if row is None else _definition(scope_id, schedule_id, row)


@dataclass(frozen=True)
class DefinitionKey:
    """What a quarantine needs of a definition row it cannot load whole."""

    scope_id: str
    schedule_id: str
    state: str
    revision: int
    generation: int
    cursor_utc: datetime | None = None


def lock_definition_key(cur, scope_id: str, schedule_id: str) -> DefinitionKey | None:
    """The definition row locked FOR UPDATE, only its state, revision and active generation."""
    row = run(cur, "lock_definition_key",
              {"scope_id": scope_id, "schedule_id": schedule_id}).fetchone()
    return None if row is None else DefinitionKey(scope_id, schedule_id, *row)


def read_definition(cur, scope_id: str, schedule_id: str) -> Definition | None:
    key = {"scope_id": scope_id, "schedule_id": schedule_id}
    row = run(cur, "read_definition", key).fetchone()
    return None if row is None else _definition(scope_id, schedule_id, row)


def list_definitions(cur, scope_id: str, *, after: str, limit: int,
                     states: list[str] | None) -> list[Definition]:
    rows = run(cur, "list_definitions",
               {"scope_id": scope_id, "after": after, "limit": limit, "states": states})
    return [_definition(scope_id, row[21], row) for row in rows.fetchall()]


def insert_history(cur, *, scope_id: str, schedule_id: str, generation: int | None, event: str,
                   actor: str, detail: dict[str, Any], recorded_at: datetime) -> None:
    run(cur, "insert_history", {
        "scope_id": scope_id, "schedule_id": schedule_id, "generation": generation,
        "event": event, "actor": actor, "detail": to_json(detail), "recorded_at": recorded_at,
    })


def upsert_dispatch(cur, *, routing_id: int, schedule_id: str, due_at: datetime | None) -> int:
    """Re-arm the dispatch row (API changes): due time set, lease cleared, revision bumped."""
    row = run(cur, "upsert_dispatch",
              {"routing_id": routing_id, "schedule_id": schedule_id, "due_at": due_at})
    return row.fetchone()[0]


def iso(value: datetime | None) -> str | None:
    """Microsecond ISO-8601 text of an instant (history details and evidence)."""
    return iso_us(value)  # value.isoformat(timespec="microseconds"), formatted once
