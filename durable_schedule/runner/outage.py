"""Riding out a database outage in a ``--loop`` runner (docs/operations.md "Failover").

A managed PostgreSQL failover, a restarted pooler or a network blip makes every statement fail
for 10-60 s. A bounded pass keeps its 3 transient retries (1.75 s) and exits DS405: cron or the
orchestrator runs it again. A ``--loop`` runner is the long-lived process an orchestrator keeps
up, so dying after 1.75 s would take every worker down in each failover. Instead, once the
pass's own retries are exhausted by a *connection* failure, the loop reconnects with capped
exponential backoff and full jitter (so a fleet of runners does not reconnect in lockstep) for
up to ``DURABLE_SCHEDULE['OUTAGE_TOLERANCE_SECONDS']``, then exits non-zero with DS405.

Nothing is lost meanwhile: every committed fact is in the database, a transaction the outage
cut rolled back, and a lease this runner held expires and is taken over as after any crash.

Logging: each state change once — ``lost`` (WARNING), ``still down`` (WARNING, at the first
failed reconnect), ``restored`` (WARNING, with the outage's length) — not a line per attempt.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

from django.db import (
    DatabaseError,
    InterfaceError,
    InternalError,
    OperationalError,
    connections,
)
from django.db.backends.signals import connection_created

from durable_schedule import conf
from durable_schedule.errors import (
    PoolerDropsPreparedStatements,
    RetriesExhausted,
    ServerChanged,
)
from durable_schedule.runner import state
from durable_schedule.runner.retry import sqlstate_of

log = logging.getLogger("durable_schedule.runner")

#: First reconnect delay and its cap, in seconds (before jitter).
BACKOFF_BASE = 0.5
BACKOFF_CAP = 10.0

#: Besides class 08: server shutdown and start-up, a session the server ended for idling
#: (idle_session_timeout 57P05, idle_in_transaction_session_timeout 25P03), and a server that
#: went read-only under the runner (a failover's demoted primary or a standby;
#: runner/retry.py RECONNECT_SQLSTATES).
_CONNECTION_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57P05", "25P03", "25006"})


def is_connection_loss(exc: BaseException) -> bool:
    """The database (or the pooler in front of it) is unreachable, as opposed to a statement
    that failed: a connection-exception SQLSTATE (class 08), a server shutdown, a server that
    went read-only (25006: a failover's demoted primary or a standby), or a dropped connection
    without any SQLSTATE. Looks through RetriesExhausted to its cause."""
    cur: BaseException | None = exc
    for _ in range(10):
        if cur is None:
            return False
        if not isinstance(cur, RetriesExhausted):
            break
        cur = cur.__cause__
    if isinstance(cur, PoolerDropsPreparedStatements):
        # DS415 from a bind the server refused (08P01): the pooler's fault, not an outage to
        # ride out; it says what to change.
        return False
    state_ = sqlstate_of(cur)
    if state_ is not None:
        return state_.startswith("08") or state_ in _CONNECTION_SQLSTATES
    # Without SQLSTATE: a dropped connection, or the protocol-level surprise a server connection
    # cut behind a pooler leaves (psycopg's client-side InternalError "received 2 results from
    # command 'COMMIT'"), which runner/retry.py already retries as a cut connection.
    return isinstance(cur, (OperationalError, InterfaceError, InternalError))


def backoff_delays(rng: random.Random | None = None):
    """Capped exponential backoff with full jitter: delay n is uniform in [0, min(cap, base*2^n)],
    never below a tenth of the base (so a loop never spins)."""
    rng = rng or random.Random()
    ceiling = BACKOFF_BASE
    while True:
        yield max(BACKOFF_BASE / 10, rng.uniform(0, ceiling))
        ceiling = min(BACKOFF_CAP, ceiling * 2)


def _database_answers() -> None:
    conn = connections[conf.database_alias()]
    conn.close()  # whatever it held belongs to the lost session
    conn.ensure_connection()
    with conn.cursor() as cur:
        # A server that answers read-only (a standby or the demoted primary after a failover)
        # is not back yet: every pass would fail on its first write.
        cur.execute("select current_setting('transaction_read_only')")
        if cur.fetchone()[0] == "on":
            conn.close()
            raise OperationalError("the server accepts only read-only transactions (a standby "
                                   "or a demoted primary after a failover?)")


#: The server's cluster (pg_control_system's system identifier, readable by every role) and
#: the database's oid: a physical failover to a standby keeps both; a restore into a new
#: cluster or database, or a name that now points at another server, changes one of them.
_IDENTITY = """
select (select system_identifier::text from pg_control_system()),
       (select oid::bigint from pg_database where datname = current_database())
"""


class ServerIdentity:
    """Which database a loop serves, learnt at its first answer.

    :meth:`check` after an outage raises ServerChanged (DS446) when the database that answers
    now is another one. While :meth:`watching`, every new connection of the store's alias, in
    any thread of the process (the pass's own transient retries reconnect without any outage
    the loop rides out, and the heartbeat and renewal threads reconnect on their own), is
    checked before its first statement: one that reaches another database is closed and
    refused with DS446, and from then on every new connection is refused, so nothing -- a
    pass, a beat, the stop record -- is written there."""

    def __init__(self) -> None:
        self.known: tuple[str, int] | None = None
        #: The refusal, once a connection found another database (sticky: the process stops).
        self.changed: ServerChanged | None = None
        self._lock = threading.Lock()

    @staticmethod
    def read(conn=None) -> tuple[str, int]:
        with (conn or connections[conf.database_alias()]).cursor() as cur:
            cur.execute(_IDENTITY)
            system, database = cur.fetchone()
        return str(system), int(database)

    def learn(self) -> None:
        """Remember the identity, or leave it to the next reconnect (the database may be down
        at start); best effort: a loop must not fail for not knowing it."""
        try:
            self.known = self.read()
        except Exception:  # noqa: BLE001 -- unknown until the next answer
            self.known = None

    def check(self, name: str) -> None:
        """After an outage: DS446 when another database answers now; a lost connection
        propagates (one more lost pass)."""
        if self.changed is not None:
            raise self._again()
        if self.known is None:
            self.learn()
            return
        now = self.read()
        if now != self.known:
            connections[conf.database_alias()].close()
            raise self._refuse(name, now)

    def _refuse(self, name: str, found: tuple[str, int]) -> ServerChanged:
        with self._lock:
            if self.changed is None:
                self.changed = ServerChanged(
                    f"{name} runner: a connection reached another database than the one it "
                    "served; stopped before anything ran against it",
                    served=f"system {self.known[0]}, database oid {self.known[1]}",
                    found=f"system {found[0]}, database oid {found[1]}")
            return self.changed

    def _again(self) -> ServerChanged:
        """The refusal as a new exception: threads raising one shared instance would tangle
        its traceback and context."""
        return ServerChanged(self.changed.message, **self.changed.context)

    @contextmanager
    def watching(self, name: str):
        """Check every new connection of the store's alias while the block runs."""
        alias = conf.database_alias()

        def on_connect(sender, connection, **kwargs) -> None:
            if connection.alias != alias:
                return
            if self.changed is None:
                try:
                    found = self.read(connection)
                except DatabaseError as exc:
                    if is_connection_loss(exc):
                        raise  # as the connection's first statement would have
                    # Unreadable here (a stripped-down server): unchecked, as before; a
                    # session without autocommit must not start in a failed transaction.
                    connection.connection.rollback()
                    return
                with self._lock:
                    if self.known is None:  # the database was down when the loop started
                        self.known = found
                if found == self.known:
                    return
                self._refuse(name, found)
            connection.close()  # nothing more goes over it
            raise self._again()

        uid = f"durable_schedule.server_identity.{id(self)}"
        connection_created.connect(on_connect, weak=False, dispatch_uid=uid)
        try:
            yield self
        finally:
            connection_created.disconnect(dispatch_uid=uid)


class Budget:
    """When the current outage began, for a loop: an outage ends when a *pass* succeeds, not
    when the reconnect probe answers. A database that answers ``select 1`` but cuts every pass
    (a server in a crash loop, a pooler that loses its server connection mid-transaction) is
    still down, and the tolerance must run out on it too instead of starting afresh at every
    reconnect."""

    def __init__(self) -> None:
        self.started: float | None = None

    def start(self, now: float) -> float:
        if self.started is None:
            self.started = now
        return self.started

    def reset(self) -> None:
        self.started = None


def ride_out(name: str, error: BaseException, stop, *,
             probe: Callable[[], None] = _database_answers,
             clock: Callable[[], float] = time.monotonic,
             budget: Budget | None = None) -> bool:
    """Wait until the database answers again; True when it does, False when ``stop`` was set.

    Raises RetriesExhausted (DS405) once the outage has lasted longer than the tolerance,
    counted from ``budget``'s start (the first lost pass since the last good one) when given.
    """
    tolerance = conf.outage_tolerance_seconds()
    started = (budget or Budget()).start(clock())
    state.connection_lost(name)
    log.warning("%s runner: database connection lost, reconnecting for up to %.0fs: %s",
                name, tolerance, str(error).strip(), extra={"runner": name, "outage": "lost"})
    said_still_down = False
    last: BaseException = error
    for delay in backoff_delays():
        elapsed = clock() - started
        if elapsed >= tolerance:
            raise RetriesExhausted(
                f"{name} runner: the database stayed unreachable (or cut every pass) for "
                f"{elapsed:.0f}s, longer "
                f"than DURABLE_SCHEDULE['OUTAGE_TOLERANCE_SECONDS'] = {tolerance:g}; last: "
                f"{type(last).__name__}: {str(last).strip()}",
                phase=f"{name}.reconnect") from last
        if stop.wait(min(delay, max(0.0, tolerance - elapsed))):
            return False
        try:
            probe()
        except DatabaseError as exc:
            last = exc
            if not said_still_down:
                said_still_down = True
                log.warning("%s runner: database still down after %.1fs, retrying with backoff"
                            " up to %.0fs apart: %s", name, clock() - started, BACKOFF_CAP,
                            str(exc).strip(), extra={"runner": name, "outage": "still_down"})
            continue
        seconds = clock() - started
        state.connection_restored(name, seconds)
        log.warning("%s runner: database connection restored after %.1fs", name, seconds,
                    extra={"runner": name, "outage": "restored"})
        return True
    raise AssertionError("unreachable")  # pragma: no cover
