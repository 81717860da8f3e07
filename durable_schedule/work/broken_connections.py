"""Closing a thread's database connections that an error left unusable (docs/operations.md
"Failover and database outages").

Django drops broken connections at every request's boundary (``close_old_connections``). The
threads executors use serve no requests -- the ``--concurrency`` slot threads, and the one thread
``asgiref.sync.sync_to_async`` runs an async executor's ORM calls on -- so after a failover or a
terminated backend their connection stayed dead, and every later attempt there that used the
database failed, for the life of the worker process.
"""

from __future__ import annotations

import threading

import psycopg
from django.db import connections

#: Bumped by :func:`note_connection_loss`; each slot thread remembers the value it last saw.
_losses = 0
_losses_lock = threading.Lock()
_seen = threading.local()


def _usable_and_writable(conn) -> bool:
    """One round trip, as Django's ``is_usable()``: False when the session is dead, and also
    when it answers read-only -- the standby or demoted primary a reconnect after a failover
    can land on (stale DNS, a pooler still pointing at the old host). Such a session answers
    ``SELECT 1`` for ever, so the slot would fail every attempt that writes."""
    try:
        with conn.connection.cursor() as cur:
            cur.execute("select current_setting('transaction_read_only')")
            return cur.fetchone()[0] != "on"
    except psycopg.Error:
        return False


def drop_broken_connections() -> None:
    """Close this thread's connections that an error left unusable (or read-only), so the next
    use reconnects.

    Called after a failed attempt (a dead connection shows as the executor's error): the
    success path pays nothing, only a connection that saw an error pays for the one round
    trip, and ``CONN_MAX_AGE`` is not applied here: the thread keeps its healthy connection
    across passes. Closing one notes a connection loss (:func:`note_connection_loss`).
    """
    for conn in connections.all(initialized_only=True):
        if conn.connection is None or not conn.errors_occurred or conn.in_atomic_block:
            continue
        if _usable_and_writable(conn):
            conn.errors_occurred = False
        else:
            conn.close()
            # Whatever cut this one (a restart, a failover) most likely cut the other slots'
            # idle connections too: they check theirs before their next job.
            note_connection_loss()


def new_job_health_check() -> None:
    """Each job is to an executor thread what a request is to a web thread: with Django's
    ``CONN_HEALTH_CHECKS`` on, the first query of the job checks the thread's connection first
    and reconnects if it died while the thread was idle (``idle_session_timeout``, a failover,
    a restarted pooler, ``pg_terminate_backend``). Django resets the check only at request
    boundaries, which executor threads never see, so without this the first attempt after such
    a cut failed. With the setting off (Django's default) this changes nothing."""
    for conn in connections.all(initialized_only=True):
        conn.health_check_done = False


#: The loss count (:func:`note_connection_loss`) the async executors' ORM thread last checked
#: its connections at; read by the event loop to skip the hop to that thread when nothing is
#: to be checked.
_sync_thread_seen = 0


def _health_checks_configured() -> bool:
    return any(settings.get("CONN_HEALTH_CHECKS") for settings in connections.settings.values())


def _before_async_job() -> None:
    """In the ORM thread of the async executors: what a slot thread does before each job."""
    global _sync_thread_seen
    seen = _losses
    new_job_health_check()
    check_after_loss()
    _sync_thread_seen = seen


async def check_sync_connections_before_job() -> None:
    """Before an async executor runs: the thread its ORM calls run on (``sync_to_async``,
    thread-sensitive) checks its connections as a ``--concurrency`` slot thread does before
    each job (:func:`new_job_health_check`, :func:`check_after_loss`), so a connection the
    server cut while it was idle is replaced before the job's first query instead of failing
    that attempt. Costs a hop to that thread only when there is something to check
    (``CONN_HEALTH_CHECKS`` on, or a connection loss noted since it last looked). Never raises:
    a check that fails leaves the job to meet the error itself."""
    if _losses == _sync_thread_seen and not _health_checks_configured():
        return
    from asgiref.sync import sync_to_async

    try:
        await sync_to_async(_before_async_job, thread_sensitive=True)()
    except Exception:  # noqa: BLE001, S110 -- best effort; the job meets the error itself
        pass


async def drop_broken_sync_connections() -> None:
    """The same in the thread ``sync_to_async`` (thread-sensitive) runs on from the event loop:
    the thread an async executor's ORM calls used. Never raises (the attempt's own error is the
    one to report)."""
    from asgiref.sync import sync_to_async

    try:
        await sync_to_async(drop_broken_connections, thread_sensitive=True)()
    except Exception:  # noqa: BLE001, S110 -- best effort; the next failure tries again
        pass


def note_connection_loss() -> None:
    """The runner found one of its connections cut (a connection loss it retries or rides
    out): a server restart, a failover or a restarted pooler cuts every connection of the
    process at once, the idle ones of the slot threads too. Each slot thread checks its
    connections before its next job (:func:`check_after_loss`)."""
    global _losses
    with _losses_lock:
        _losses += 1


def check_after_loss() -> None:
    """In an executor thread before a job: when a connection loss was noted since this thread
    last looked, check its connections (one round trip each, once per loss) and close the dead
    or read-only ones, so the job's first query reconnects instead of failing the attempt."""
    losses = _losses
    if getattr(_seen, "losses", 0) == losses:
        return
    _seen.losses = losses
    for conn in connections.all(initialized_only=True):
        if conn.connection is None or conn.in_atomic_block:
            continue
        if not _usable_and_writable(conn):
            conn.close()
