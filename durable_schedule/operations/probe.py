"""Bounded reads for the health probes: ``durable_status``, the store gauges (the metrics view,
``durable_status --metrics``) and the admin dashboard (docs/operations.md "Health").

A probe must answer. Without a bound, a session holding a lock on a store table (an
``ACCESS EXCLUSIVE`` of a migration or a DBA's ``LOCK TABLE``) makes the probe wait for as long
as the lock is held, and an orchestrator or an operator gets no answer at all. So every
transaction of a probe sets a transaction-local (``SET LOCAL``) ``lock_timeout`` and
``statement_timeout`` of :data:`DEFAULT_TIMEOUT_SECONDS` (``durable_status --timeout``); a lower
value already in force (``PGOPTIONS``) is kept. Transaction-local, so nothing outlives the
transaction: a transaction-mode pooler hands the server connection on without it. A read that
hits the bound fails like any other database error of the probe: the store is reported as not
answering (``DS426``, exit 2, ``durable_schedule_store_up 0``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction

from durable_schedule.errors import InvalidProbeTimeout
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "MAX_TIMEOUT_SECONDS", "bound", "bounded_transaction",
           "check_timeout"]

#: Seconds one statement of a probe may wait for a lock or run; 0 or None: no bound of ours.
DEFAULT_TIMEOUT_SECONDS = 5.0
#: PostgreSQL's longest ``lock_timeout`` / ``statement_timeout``: INT_MAX milliseconds.
MAX_TIMEOUT_SECONDS = 2_147_483


def check_timeout(seconds: object) -> float:
    """``durable_status --timeout``: 0 (no bound) or a finite number of seconds up to
    :data:`MAX_TIMEOUT_SECONDS`; DS440 otherwise, before anything is read. Without this
    check NaN and infinity ended the command with a traceback, and a value beyond the server's
    range made every read fail, reported as a store that does not answer (DS426, exit 2)."""
    if (isinstance(seconds, bool) or not isinstance(seconds, int | float)
            or not math.isfinite(seconds) or not 0 <= seconds <= MAX_TIMEOUT_SECONDS):
        raise InvalidProbeTimeout(
            f"--timeout must be 0 (no bound) or a number of seconds up to "
            f"{MAX_TIMEOUT_SECONDS}", got=str(seconds)[:40])
    return float(seconds)


def bound(cur, seconds: float | None) -> dict[str, str] | None:
    """Cap the current transaction's lock and statement timeouts at ``seconds``; the previous
    values (for :func:`bounded_transaction` to restore), or None when ``seconds`` is 0/None."""
    if not seconds:
        return None
    cur.execute(query("operations_queries.sql", "bound_probe"),
                {"ms": max(1, round(seconds * 1000))})
    return {name: setting for name, setting, _ in cur.fetchall()}


@contextmanager
def bounded_transaction(*, using: str | None = None,
                        seconds: float | None = DEFAULT_TIMEOUT_SECONDS) -> Iterator[object]:
    """An owner cursor in a transaction whose statements are bounded by ``seconds``.

    Outside any transaction it is the outermost one, and the bound ends with it. Inside a
    caller's transaction (a request under ``ATOMIC_REQUESTS``) it is a savepoint: the previous
    values are put back after the reads, and a failed read rolls the savepoint (and the bound)
    back, so the caller's own statements run as they would have."""
    conn = connection(using)
    nested = conn.in_atomic_block
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        previous = bound(cur, seconds)
        yield cur
        if nested and previous is not None:
            cur.execute(query("operations_queries.sql", "restore_probe"), previous)
