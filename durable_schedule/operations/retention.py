"""Retention: ``manage.py durable_prune --older-than AGE [--dry-run]`` (docs/operations.md
"Retention").

What is removed, in bounded batches (each its own transaction, ``batch`` rows at most):

* of terminal Work (succeeded, failed, expired, canceled) finished before the cutoff: its
  permits, quarantine rows and Work history;
* occurrences that nothing can need again: skipped, superseded or canceled, untouched since the
  cutoff, wholly behind their schedule's cursor (a pass never evaluates before the cursor) and
  named by no Work;
* heartbeats of runners that stopped or died before the cutoff.

What is kept, and why: the ``durable_work`` row itself. Compare-or-return answers a retried
enqueue from that row (scope, command, idempotency key, work id, fingerprint, state, accepted
time) through its unique key; moving the identity elsewhere would need every enqueue, under
every isolation level, to consult a second table race-free. So a pruned Work still answers
``work.get()`` and a retried enqueue returns the original, with its final state and result; its
attempt-level detail (history, permits, quarantine) is gone. Materialized occurrences stay for
the same reason: their Work names them. History partitions are archived separately
(:mod:`durable_schedule.operations.archive`).

Scopes are found by walking routing ids through the runtime's routing lookup; the deletes run
as the migration owner inside one scope's transaction, so row-level security still admits that
scope only: prune needs no RLS exception.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.db import DatabaseError, transaction

from durable_schedule.errors import InvalidRetention
from durable_schedule.operations.scopes import routing_ids
from durable_schedule.runner import committed
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection, routed

#: Pruning anything younger is refused: an operator may still be looking at it.
MIN_AGE = timedelta(hours=1)
#: A longer age puts the cutoff before year 1 (PostgreSQL refuses it, Python cannot hold it);
#: nothing in a store is that old, so the bound costs nothing.
MAX_AGE = timedelta(days=365_000)
MAX_BATCH = 10_000
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")


def _q(name: str) -> str:
    return query("retention_queries.sql", name)


def parse_age(text: str) -> timedelta:
    """``90m``, ``12h``, ``30d``, ``2w`` -> timedelta; at least :data:`MIN_AGE` (DS427)."""
    match = _AGE.match(text or "")
    if not match:
        raise InvalidRetention("--older-than must be a whole number with a unit m, h, d or w "
                               "(e.g. 30d)", got=text)
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_AGE.total_seconds():
        raise InvalidRetention(f"--older-than must be at most {MAX_AGE.days}d", got=text)
    age = timedelta(seconds=seconds)
    if age < MIN_AGE:
        raise InvalidRetention(f"--older-than must be at least {MIN_AGE}", got=text)
    return age


@dataclass
class PruneCounts:
    scopes: int = 0
    work: int = 0
    permits: int = 0
    quarantine: int = 0
    work_history: int = 0
    occurrences: int = 0
    heartbeats: int = 0
    batches: int = 0
    dry_run: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


def scope_ids(*, using: str | None = None) -> list[str]:
    """Every scope of the store (:mod:`durable_schedule.operations.scopes`)."""
    out = []
    for routing_id in routing_ids(using=using):
        with routed(routing_id, using=using) as (_cur, scope_id):
            if scope_id is not None:
                out.append(scope_id)
    return out


def prune(older_than: timedelta, *, dry_run: bool, batch: int = 500,
          using: str | None = None) -> PruneCounts:
    """Remove what the module docstring lists; ``dry_run`` only counts."""
    if older_than < MIN_AGE:
        raise InvalidRetention(f"older_than must be at least {MIN_AGE}", got=str(older_than))
    if older_than > MAX_AGE:
        raise InvalidRetention(f"older_than must be at most {MAX_AGE.days} days",
                               got=str(older_than))
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise InvalidRetention(f"batch must be between 1 and {MAX_BATCH}", got=batch)
    conn = connection(using)
    counts = PruneCounts(dry_run=dry_run)
    try:
        with conn.cursor() as cur:
            cur.execute(_q("cutoff"), [older_than.total_seconds()])
            cutoff = cur.fetchone()[0]
        for scope_id in scope_ids(using=using):
            counts.scopes += 1
            if dry_run:
                _preview_scope(conn, scope_id, cutoff, counts)
            else:
                _prune_scope(conn, scope_id, cutoff, batch, counts)
        with transaction.atomic(using=conn.alias), conn.cursor() as cur:
            cur.execute(_q("preview_heartbeats" if dry_run else "prune_heartbeats"),
                        {"cutoff": cutoff})
            counts.heartbeats += cur.fetchone()[0] if dry_run else cur.rowcount
    except DatabaseError as exc:
        if not dry_run:  # the batches that committed before the error stay removed: say so
            committed.note(exc, {k: v for k, v in counts.as_dict().items()
                                 if k not in ("dry_run", "scopes")})
        raise
    return counts


def _in_scope(cur, scope_id: str) -> None:
    """The owner's statements in this transaction see (and may delete) this scope only."""
    cur.execute(_q("enter_scope_as_owner"), [scope_id])


def _preview_scope(conn, scope_id: str, cutoff, counts: PruneCounts) -> None:
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        _in_scope(cur, scope_id)
        args = {"scope_id": scope_id, "cutoff": cutoff}
        cur.execute(_q("preview_work"), args)
        work, permits, quarantine, history = cur.fetchone()
        counts.work += work
        counts.permits += permits
        counts.quarantine += quarantine
        counts.work_history += history
        cur.execute(_q("preview_occurrences"), args)
        counts.occurrences += cur.fetchone()[0]


def _prune_scope(conn, scope_id: str, cutoff, batch: int, counts: PruneCounts) -> None:
    args = {"scope_id": scope_id, "cutoff": cutoff, "batch": batch}
    while True:  # each batch commits on its own: locks stay short, progress is kept
        with transaction.atomic(using=conn.alias), conn.cursor() as cur:
            _in_scope(cur, scope_id)
            cur.execute(_q("ignore_work_history_protection"))
            cur.execute(_q("prune_work_batch"), args)
            work, permits, quarantine, history, _moved = cur.fetchone()
        counts.batches += 1
        counts.work += work
        counts.permits += permits
        counts.quarantine += quarantine
        counts.work_history += history
        if work < batch:
            break
    while True:
        with transaction.atomic(using=conn.alias), conn.cursor() as cur:
            _in_scope(cur, scope_id)
            cur.execute(_q("prune_occurrences_batch"), args)
            deleted = cur.rowcount
        counts.batches += 1
        counts.occurrences += deleted
        if deleted < batch:
            break
