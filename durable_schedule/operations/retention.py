"""Retention: ``manage.py durable_prune --older-than AGE [--dry-run]`` (docs/operations.md
"Retention").

What is removed, in bounded batches (each its own transaction, ``batch`` rows at most):

* of terminal Work (succeeded, failed, expired, canceled) finished before the cutoff: its
  permits, quarantine rows and Work history;
* occurrences that nothing can need again: skipped, superseded or canceled, untouched since the
  cutoff, wholly behind their schedule's cursor (a pass never evaluates before the cursor) and
  named by no Work;
* heartbeats of runners that stopped or died before the cutoff.

Which terminal Work a run reads: a per-scope mark remembers the last Work pruned (finish time,
row id). A run starts one margin (:data:`DEFAULT_MARGIN`) before it, not after it: Work can
become terminal with an earlier finish time than Work already pruned (the database clock stepped
back, a long transaction committed late), and would otherwise keep its detail forever. Only Work
that still has permits, quarantine rows or history is selected and counted, so what the margin
reads again is not counted twice. A mark that lies after the database's now (the clock went
back past it) is ignored: that scope is scanned in full and the mark written anew; ``rescan``
scans every scope in full, for a step back longer than the margin.

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

from durable_schedule.errors import InvalidPruneMargin, InvalidPruneRescan, InvalidRetention
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
#: How far before the mark each run reads again (docs/operations.md "Retention").
DEFAULT_MARGIN = timedelta(days=1)
MIN_MARGIN = timedelta(minutes=1)
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: ASCII digits: ``\d`` also admits "３０d" or "٣٠d", which int() reads as 30 -- an age nobody
#: typed in the documented form.
_AGE = re.compile(r"^\s*([0-9]+)\s*([mhdw])\s*$")


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


def parse_margin(text: str) -> timedelta:
    """``--margin``: ``90m``, ``12h``, ``2d``, ``1w`` -> timedelta, from :data:`MIN_MARGIN` to
    :data:`MAX_AGE` (DS442)."""
    match = _AGE.match(text or "")
    if not match:
        raise InvalidPruneMargin("--margin must be a whole number with a unit m, h, d or w "
                                 "(e.g. 2d)", got=text)
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_AGE.total_seconds():
        raise InvalidPruneMargin(f"--margin must be at most {MAX_AGE.days}d", got=text)
    margin = timedelta(seconds=seconds)
    if margin < MIN_MARGIN:
        raise InvalidPruneMargin(f"--margin must be at least {MIN_MARGIN}", got=text)
    return margin


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
    #: scopes read in full because ``rescan`` asked for it
    rescanned: int = 0
    #: scopes read in full because their mark lay after the database's now
    mark_ahead: int = 0

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
          margin: timedelta | None = None, rescan: bool = False,
          using: str | None = None) -> PruneCounts:
    """Remove what the module docstring lists; ``dry_run`` only counts. ``margin`` (default
    :data:`DEFAULT_MARGIN`): how far before each scope's mark to read again; ``rescan``: ignore
    the marks and read every scope in full (no ``margin`` with it: DS443)."""
    if older_than < MIN_AGE:
        raise InvalidRetention(f"older_than must be at least {MIN_AGE}", got=str(older_than))
    if older_than > MAX_AGE:
        raise InvalidRetention(f"older_than must be at most {MAX_AGE.days} days",
                               got=str(older_than))
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise InvalidRetention(f"batch must be between 1 and {MAX_BATCH}", got=batch)
    if not isinstance(rescan, bool):
        raise InvalidPruneRescan("rescan must be True or False", got=repr(rescan))
    if rescan and margin is not None:
        raise InvalidPruneRescan("--rescan reads every scope in full: a --margin means nothing "
                                 "with it", got=str(margin))
    if margin is None:
        margin = DEFAULT_MARGIN
    if not isinstance(margin, timedelta) or not MIN_MARGIN <= margin <= MAX_AGE:
        raise InvalidPruneMargin(f"margin must be between {MIN_MARGIN} and {MAX_AGE.days} days",
                                 got=str(margin))
    conn = connection(using)
    counts = PruneCounts(dry_run=dry_run)
    try:
        with conn.cursor() as cur:
            cur.execute(_q("cutoff"), [older_than.total_seconds()])
            cutoff = cur.fetchone()[0]
        for scope_id in scope_ids(using=using):
            counts.scopes += 1
            if dry_run:
                _preview_scope(conn, scope_id, cutoff, margin, rescan, counts)
            else:
                _prune_scope(conn, scope_id, cutoff, batch, margin, rescan, counts)
        with transaction.atomic(using=conn.alias), conn.cursor() as cur:
            cur.execute(_q("preview_heartbeats" if dry_run else "prune_heartbeats"),
                        {"cutoff": cutoff})
            counts.heartbeats += cur.fetchone()[0] if dry_run else cur.rowcount
    except DatabaseError as exc:
        if not dry_run:  # the batches that committed before the error stay removed: say so
            committed.note(exc, {k: v for k, v in counts.as_dict().items()
                                 if k not in ("dry_run", "scopes", "rescanned", "mark_ahead")})
        raise
    return counts


def _in_scope(cur, scope_id: str) -> None:
    """The owner's statements in this transaction see (and may delete) this scope only."""
    cur.execute(_q("enter_scope_as_owner"), [scope_id])


def _start(cur, scope_id: str, margin: timedelta, rescan: bool,
           counts: PruneCounts) -> tuple[object, int, bool]:
    """Where this run reads the scope's terminal Work from: ``(after_at, after_ref, ahead)``,
    the key to start after (``None``: from the first Work) and whether the mark lay after the
    database's now (then it is to be forgotten)."""
    cur.execute(_q("mark_position"), {"scope_id": scope_id})
    row = cur.fetchone()
    if row is None:
        return None, 0, False
    at, _ref, ahead = row
    if ahead:
        counts.mark_ahead += 1
        return None, 0, True
    if rescan:
        counts.rescanned += 1
        return None, 0, False
    return at - margin, 0, False


def _preview_scope(conn, scope_id: str, cutoff, margin: timedelta, rescan: bool,
                   counts: PruneCounts) -> None:
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        _in_scope(cur, scope_id)
        after_at, after_ref, _ahead = _start(cur, scope_id, margin, rescan, counts)
        args = {"scope_id": scope_id, "cutoff": cutoff, "after_at": after_at,
                "after_ref": after_ref}
        # JIT compiling costs more than the counts themselves (retention_queries.sql)
        cur.execute(_q("jit_off"))
        jit = cur.fetchone()[0]
        cur.execute(_q("preview_work"), args)
        work, permits, quarantine, history = cur.fetchone()
        counts.work += work
        counts.permits += permits
        counts.quarantine += quarantine
        counts.work_history += history
        cur.execute(_q("preview_occurrences"), args)
        counts.occurrences += cur.fetchone()[0]
        cur.execute(_q("jit_restore"), [jit])  # a caller's own transaction keeps its setting


def _prune_scope(conn, scope_id: str, cutoff, batch: int, margin: timedelta, rescan: bool,
                 counts: PruneCounts) -> None:
    args = {"scope_id": scope_id, "cutoff": cutoff, "batch": batch}
    first = True
    while True:  # each batch commits on its own: locks stay short, progress is kept
        with transaction.atomic(using=conn.alias), conn.cursor() as cur:
            _in_scope(cur, scope_id)
            if first:
                args["after_at"], args["after_ref"], ahead = _start(cur, scope_id, margin,
                                                                    rescan, counts)
                if ahead:  # forgotten in the same transaction as the first batch is removed
                    cur.execute(_q("forget_mark"), {"scope_id": scope_id})
            cur.execute(_q("ignore_work_history_protection"))
            cur.execute(_q("prune_work_batch"), args)
            work, permits, quarantine, history, _moved, last_at, last_ref = cur.fetchone()
            if first and ahead and work == 0:
                cur.execute(_q("mark_after_full_scan"), args)
        first = False
        args["after_at"], args["after_ref"] = last_at, last_ref  # the next batch goes on after
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
