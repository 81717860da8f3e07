"""Runner heartbeats (docs/operations.md "Health: heartbeats and thresholds").

A ``--loop`` runner owns one row of ``durable_runner_heartbeat`` from start to stop: its lease
owner, host, pid, kind (schedule or work), package version, start time, last beat, last pass
and that pass's counts. The pass loop only records the pass in memory (:meth:`record_pass`); a
background thread writes the row every ``HEARTBEAT_SECONDS`` on its own connection, so a Work
pass that runs a long executor still beats, and a busy loop adds no write per pass. The row is
written once more, with ``stopped_at``, when the runner stops cleanly; a runner killed outright
simply stops beating and ``durable_status`` reports it dead after ``RUNNER_DEAD_SECONDS``.

Security (docs/security.md "Runner heartbeats"): the write runs as ``durable_runtime`` inside a
runtime transaction and calls the SECURITY DEFINER function ``durable_runner_beat()``, the only
way to the table; the runtime role holds no privilege on the table itself. The table carries no
tenant data, so it has no row-level security; times come from the database clock seam.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from django.db import DatabaseError, connections

from durable_schedule import __version__, conf
from durable_schedule.errors import SchemaBelowFloor
from durable_schedule.store import identifiers
from durable_schedule.store.transactions import runtime_transaction

log = logging.getLogger("durable_schedule.runner")

_BEAT = ("select durable_runner_beat(%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)")


def _clean(text: str, limit: int) -> str:
    """Host and version as the store accepts them (the identifier rule, checked again by
    durable_runner_beat, DS425): without control, format or separator characters."""
    out = identifiers.strip_forbidden(text).strip()
    return (out or "unknown")[:limit]


class Heartbeat:
    """The heartbeat of one runner process. ``start()`` writes the first beat (errors that a
    retry cannot fix propagate: the runner must not run unseen), ``stop()`` the last."""

    def __init__(self, kind: str, *, lease_owner: str, interval: float | None = None,
                 using: str | None = None) -> None:
        self.runner_id = uuid.uuid4()
        self.kind = kind
        self.lease_owner = lease_owner
        self.host = _clean(socket.gethostname(), 255)
        self.pid = os.getpid()
        self.version = _clean(__version__, 64)
        self.interval = conf.heartbeat_seconds() if interval is None else interval
        self.using = using or conf.database_alias()
        self._lock = threading.Lock()
        self._passes = 0
        self._last_pass: float | None = None
        self._counts: dict[str, Any] = {}
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    # ---------------------------------------------------------------- the loop's side
    def record_pass(self, counts: dict[str, Any]) -> None:
        """Called after every pass; cheap (memory only)."""
        with self._lock:
            self._passes += 1
            self._last_pass = time.monotonic()
            self._counts = {k: v for k, v in counts.items() if isinstance(v, int | float)}

    def start(self) -> None:
        try:
            self.write()
        except DatabaseError as exc:
            from durable_schedule.runner.retry import is_transient, sqlstate_of

            if sqlstate_of(exc) == "42883":  # undefined_function: a store older than the code
                raise SchemaBelowFloor("the store has no durable_runner_beat() function "
                                       "(schema below 5)", using=self.using) from exc
            if not is_transient(exc):
                raise  # a missing grant: the runner must not run unseen
            self._state_change(True, exc)  # the database is away: the thread keeps trying
        self._thread = threading.Thread(target=self._run, name=f"durable-heartbeat-{self.kind}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=max(self.interval, 5.0))
        conn = connections[self.using]
        # A connection that sat open since the last pass may have been cut meanwhile (a
        # failover, a restarted pooler, pg_terminate_backend, idle_session_timeout): the first
        # write then fails on the dead session although the database answers. Reconnect once;
        # a database that is really away fails the second write too.
        stale = conn.connection is not None
        while True:
            try:
                self.write(stopping=True)
                return
            except Exception as exc:  # the stop must not fail because the database is away
                from durable_schedule.runner.outage import is_connection_loss

                if stale and not conn.in_atomic_block and is_connection_loss(exc):
                    stale = False
                    conn.close()
                    continue
                log.warning("could not record the stop of runner %s: %s", self.runner_id, exc,
                            extra={"runner": self.kind, "runner_id": str(self.runner_id)})
                return

    # ---------------------------------------------------------------- the database side
    def write(self, *, stopping: bool = False) -> None:
        """One beat, in its own runtime transaction on this thread's connection."""
        with self._lock:
            passes, last, counts = self._passes, self._last_pass, dict(self._counts)
        since = None if last is None else max(0.0, time.monotonic() - last)
        with runtime_transaction(using=self.using) as cur:
            cur.execute(_BEAT, [self.runner_id, self.kind, self.lease_owner, self.host, self.pid,
                                self.version, since, passes, json.dumps(counts), stopping])

    def _run(self) -> None:
        try:
            while not self._stopped.wait(self.interval):
                try:
                    self.write()
                except Exception as exc:  # never let the beating thread die: keep trying
                    self._state_change(True, exc)
                    connections[self.using].close()  # reconnect on the next beat
                else:
                    self._state_change(False, None)
        finally:
            connections[self.using].close()  # this thread's own connection

    def _state_change(self, failing: bool, exc: BaseException | None) -> None:
        """Log the first failed beat and the first beat after a failure, not every beat."""
        if failing == self._failing:
            return
        self._failing = failing
        extra = {"runner": self.kind, "runner_id": str(self.runner_id)}
        if failing:
            log.warning("heartbeat of runner %s failing: %s", self.runner_id, exc, extra=extra)
        else:
            log.info("heartbeat of runner %s written again", self.runner_id, extra=extra)
