"""Bounded retry of transient database errors (docs/protocol/runner.md rules R1-R3,
docs/protocol/runner.md rule R2).

A phase that fails with a transient error (disconnect, admin shutdown, serialization failure,
deadlock, lock or statement timeout) is rolled back and retried ``RETRIES`` times with the pinned
``BACKOFF`` (250 ms -> 500 ms -> 1 s); then the runner gives up with ``RetriesExhausted`` whose
context and cause chain name the phase and the schedule or Work identity. Permission, wrong-role
and validation errors are never retried: retrying cannot fix them and would hide them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import (
    DatabaseError,
    InterfaceError,
    InternalError,
    OperationalError,
    close_old_connections,
    connections,
)

from durable_schedule.errors import DurableError, RetriesExhausted, TransientDatabaseError
from durable_schedule.store.transactions import sqlstate_of

log = logging.getLogger("durable_schedule.runner")

#: Retries after the first attempt (4 attempts in all). Pinned by a test.
RETRIES = 3
#: Sleep before retry 1, 2 and 3, in seconds. Pinned by a test.
BACKOFF = (0.25, 0.5, 1.0)

#: SQLSTATEs that a fresh attempt can succeed after.
TRANSIENT_SQLSTATES = frozenset({
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "55P03",  # lock_not_available (lock_timeout)
    "57014",  # query_canceled (statement_timeout)
    "57P01",  # admin_shutdown (pg_terminate_backend)
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now
    # idle_session_timeout and idle_in_transaction_session_timeout set on the role or the
    # database: the server ended the session (a runner's connection idles between passes);
    # a fresh connection carries on.
    "57P05",  # idle_session_timeout
    "25P03",  # idle_in_transaction_session_timeout
    "08000", "08003", "08006", "08001", "08004",  # connection exceptions
    # protocol_violation: PgBouncer reports its own connection failures with it ("server conn
    # crashed?" when the server connection behind a client dies mid-transaction, seen in the
    # soak through PgBouncer); the transaction's fate is unknown, as after a cut connection.
    "08P01",
    # read_only_sql_transaction: no runner phase runs a read-only transaction of its own, so
    # this is the server: a demoted primary or a standby reached after a failover (stale DNS,
    # a pooler still pointing at the old host), or default_transaction_read_only switched on.
    # The session is closed before the retry (RECONNECT_SQLSTATES), so the retry connects anew
    # and, once the address or libpq's target_session_attrs=read-write finds the new primary,
    # succeeds.
    "25006",
})
#: Transient SQLSTATEs after which the session itself must go: the connection still answers
#: (``is_usable()``), but to a server that cannot take the phase's writes.
RECONNECT_SQLSTATES = frozenset({"25006"})
#: SQLSTATEs that must never be retried: privileges and role problems.
NEVER_RETRIED_SQLSTATES = frozenset({"42501", "28000", "28P01", "42704"})

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """True when rolling back and trying the same phase again may succeed."""
    if isinstance(exc, TransientDatabaseError):
        return True
    if isinstance(exc, DurableError):
        return False
    state = sqlstate_of(exc)
    if state in NEVER_RETRIED_SQLSTATES:
        return False
    if state in TRANSIENT_SQLSTATES:
        return True
    # A dropped connection often surfaces without a SQLSTATE (the server is gone). Behind a
    # pooler, a server connection terminated mid-statement can also leave the client with a
    # protocol-level surprise that psycopg reports as a client-side InternalError without a
    # SQLSTATE ("received 2 results from command 'COMMIT'", seen through PgBouncer in the
    # soak): the transaction's fate is unknown, exactly as after a cut connection, and the
    # retried phase re-reads everything under its lock, so it is retried the same way.
    # A server-side internal error (XX000) carries its SQLSTATE and is not retried.
    return isinstance(exc, (OperationalError, InterfaceError, InternalError)) and state is None


def _reset_connections(reconnect: bool = False) -> None:
    """Drop connections that are broken or mid-transaction so the retry starts clean; with
    ``reconnect``, every connection of this thread outside a caller's transaction."""
    for conn in connections.all(initialized_only=True):
        if conn.in_atomic_block:
            continue  # never pull the rug from a caller's transaction
        try:
            if conn.connection is not None and (reconnect or not conn.is_usable()):
                conn.close()
        except DatabaseError:
            conn.close()
    close_old_connections()


def _note_if_connection_loss(exc: BaseException) -> None:
    """A cut connection here means the slot threads' idle ones were most likely cut too."""
    from durable_schedule.runner.outage import is_connection_loss
    from durable_schedule.work.broken_connections import note_connection_loss

    if is_connection_loss(exc):
        note_connection_loss()


def run_with_retry(
    phase: str,
    fn: Callable[[], T],
    *,
    identity: dict | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``fn``; on a transient error roll back (the phase's own atomic block already did),
    reconnect when needed and retry with the pinned backoff; then raise RetriesExhausted."""
    identity = dict(identity or {})
    for attempt in range(RETRIES + 1):
        try:
            return fn()
        except Exception as exc:
            if not is_transient(exc):
                raise
            if attempt == RETRIES:
                # The processor notes the schedule identity and phase on database errors.
                notes = "; ".join(getattr(exc, "__notes__", ()))
                last = f"{type(exc).__name__}: {str(exc).strip()}"
                raise RetriesExhausted(
                    f"{phase} failed {RETRIES + 1} times with transient database errors; "
                    f"last: {last}" + (f" ({notes})" if notes else ""),
                    phase=phase, sqlstate=sqlstate_of(exc), **identity,
                ) from exc
            delay = BACKOFF[attempt]
            log.warning(
                "transient database error in %s (attempt %d/%d), retrying in %.2fs: %s",
                phase, attempt + 1, RETRIES + 1, delay, exc,
                extra={"phase": phase, "sqlstate": sqlstate_of(exc), **identity},
            )
            _reset_connections(reconnect=sqlstate_of(exc) in RECONNECT_SQLSTATES)
            _note_if_connection_loss(exc)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
