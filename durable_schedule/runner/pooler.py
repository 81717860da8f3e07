"""Checks a runner makes before it relies on session state: prepared statements and LISTEN.

A pooler in transaction mode (PgBouncer's ``pool_mode = transaction``) hands every transaction to
whichever server connection is free. Two things the runtime uses live in the server session and
do not survive that (docs/operations.md "Prepared statements and connection poolers"):

- **Prepared statements** (``DURABLE_SCHEDULE['PREPARE_STATEMENTS']``, on by default unless the
  database alias declares a transaction pooler). PgBouncer
  >= 1.21 with ``max_prepared_statements`` tracks protocol-level prepared statements and is fine;
  older ones leave a statement on the server connection where another client then meets
  ``prepared statement "_pg3_0" already exists``. :func:`check_prepared_statements` probes this
  at runner start and refuses with DS415 naming the setting; the runtime turns the same server
  error into DS415 wherever it happens (store/transactions.py), so a web process gets the same
  clear error. We refuse instead of silently falling back: a fallback mid-transaction is
  impossible (the transaction is already aborted, possibly inside the caller's atomic block),
  and a setting that means different things on different days is worse than one clear error.
- **LISTEN**: accepted, but notifications are delivered to whichever client holds the server
  connection at that moment, i.e. never to the idle listener. :func:`notify_works` sends a
  self-test notification on a channel of its own; when it does not arrive the runner polls
  every ``MAX_IDLE_SECONDS`` with one WARNING and a counter in :mod:`durable_schedule.runner.state`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid

import psycopg
from django.db import connections

from durable_schedule import conf
from durable_schedule.errors import PoolerDropsPreparedStatements

log = logging.getLogger("durable_schedule.runner")

#: How long the self-test waits for its own notification. A direct connection delivers it in
#: milliseconds; the bound only matters when it never comes.
NOTIFY_SELFTEST_SECONDS = 3.0


def connection_params() -> dict:
    """libpq parameters of the store's Django connection, for side connections."""
    return connections[conf.database_alias()].get_connection_params()


def check_prepared_statements() -> None:
    """Refuse (DS415) when a prepared statement outlives the client session that made it.

    Client A prepares a statement carrying a unique marker (protocol level, as the runtime does)
    and disconnects; client B looks for it by psycopg's name. A direct connection, or a pooler
    that resets sessions (session mode) or tracks prepared statements (PgBouncer >= 1.21 renames
    them), shows nothing. A transaction-mode pooler without that support hands B the same
    server connection, where A's statement still sits. A pooler that hands B another server
    connection escapes the probe; the runtime's own DS415 then catches it at the first clash.
    Connection errors are left to the runner's retry and outage handling.
    """
    if not conf.prepare_statements():
        return
    params = connection_params()
    marker = f"durable_schedule_probe_{uuid.uuid4().hex}"
    try:
        # As the runtime's own cursors: server-side binding (Django's default cursor class binds
        # client-side), and a prepare threshold (psycopg ignores prepare=True without one).
        with psycopg.connect(**{**params, "prepare_threshold": 2**62}, autocommit=True) as first:
            psycopg.Cursor(first).execute(f"select '{marker}'::text", prepare=True)
        with psycopg.connect(**params, autocommit=True) as second:
            rows = second.execute(
                "select name from pg_prepared_statements"
                " where name like '\\_pg3\\_%%' and statement like %s", [f"%{marker}%"],
            ).fetchall()
            for (name,) in rows:  # leave the shared server connection clean
                second.execute(f'deallocate "{name}"')
    except psycopg.OperationalError as exc:
        log.warning("could not probe prepared statements (the passes will retry): %s", exc)
        return
    if rows:
        raise PoolerDropsPreparedStatements(
            "a prepared statement outlived the client session that made it: the connection "
            "goes through a pooler in transaction mode that cannot keep prepared statements",
            host=params.get("host"), port=params.get("port"))


def notify_works(listener: psycopg.Connection) -> bool:
    """Send a notification to ``listener`` from another connection; True when it arrives.

    The self-test's ``LISTEN`` is taken back (``UNLISTEN``) before this returns, whatever the
    answer: through a transaction-mode pooler it sits on a server session that the pooler never
    resets and hands to its next client, which would otherwise inherit the registration (the
    pooler runs the ``UNLISTEN`` on the same server session when it is still the free one, as
    PgBouncer does with a server it has just used).
    """
    channel = f"durable_selftest_{uuid.uuid4().hex[:16]}"
    token = uuid.uuid4().hex
    listener.execute(f"LISTEN {channel}")
    try:
        with psycopg.connect(**connection_params(), autocommit=True) as sender:
            sender.execute("select pg_notify(%s, %s)", [channel, token])
        arrived = False
        notes = listener.notifies(timeout=NOTIFY_SELFTEST_SECONDS)
        try:
            for note in notes:
                if note.channel == channel and note.payload == token:
                    arrived = True
                    break
        finally:
            notes.close()  # releases the connection for the UNLISTEN below
    except BaseException:
        with contextlib.suppress(psycopg.Error):  # the first error is the one to report
            listener.execute(f"UNLISTEN {channel}")
        raise
    listener.execute(f"UNLISTEN {channel}")
    return arrived
