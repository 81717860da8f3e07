"""The execution context an executor or reconciler receives, and its lease watchdog (issue 3, 4).

``ctx.cancelled`` is a :class:`threading.Event`. It is set when the attempt's execution deadline
arrives, when the lease reaches its cap (maximum lease lifetime or deadline) and cannot be
renewed further, or when the lease is found lost. Cancellation is cooperative (spec 001): the
runtime cannot stop arbitrary code, so an executor that must not act after the deadline checks
``ctx.cancelled`` (or waits on it) between steps, and the database still refuses a late result.

The local timers are derived from the database clock (the instant the lease or deadline ends
minus the database's "now" at admission or renewal) plus Python's monotonic clock; they only
*warn* the executor. Every decision -- admission, success, retry, expiry -- is made again by the
database clock under the Work lock.

``ctx.renew()`` extends the lease through the guarded SQL (spec 001: capped by the attempt's
maximum lease lifetime and the absolute deadline, remaining time compared before adding). With
``heartbeat=True`` (the ``process_work`` default) a watchdog thread renews at the policy's
renewal cadence; its database work uses the thread's own connection, closed when it stops.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connections

from durable_schedule.errors import LeaseLost

log = logging.getLogger("durable_schedule.work")


class WorkContext:
    """What an executor or reconciler knows about the attempt it serves."""

    def __init__(self, *, scope: str, work_id, work_name: str, work_version: str, attempt: int,
                 permit_no: int, deadline: datetime | None, due_at: datetime,
                 admitted_at: datetime, lease_owner: str, lease_generation: int,
                 lease_expires_at: datetime, reconciling: bool,
                 renewer: Callable[[WorkContext], tuple[datetime, datetime]]) -> None:
        self.scope = scope
        self.work_id = work_id
        self.work_name = work_name
        self.work_version = work_version
        #: One-based attempt number (for a reconciler: the attempt that holds the permit).
        self.attempt = attempt
        self.permit_no = permit_no
        #: Absolute, exclusive execution deadline, or None.
        self.deadline = deadline
        #: The due time (planned slot instant) this attempt consumed.
        self.due_at = due_at
        #: The database instant at which the attempt (or reconciliation) was admitted.
        self.admitted_at = admitted_at
        self.lease_owner = lease_owner
        self.lease_generation = lease_generation
        self.reconciling = reconciling
        self.cancelled = threading.Event()
        self._renewer = renewer
        self._lock = threading.Lock()
        self._lease_expires_at = lease_expires_at
        self._cancel_at = float("inf")
        self._anchor(admitted_at, lease_expires_at)

    @property
    def lease_expires_at(self) -> datetime:
        with self._lock:
            return self._lease_expires_at

    def _anchor(self, db_now: datetime, lease_expires_at: datetime) -> None:
        """Map the lease end (and the deadline, for attempts) to a local monotonic instant."""
        ends = [lease_expires_at]
        if self.deadline is not None and not self.reconciling:
            ends.append(self.deadline)
        seconds = (min(ends) - db_now).total_seconds()
        with self._lock:
            self._lease_expires_at = lease_expires_at
            self._cancel_at = time.monotonic() + seconds

    def past_cancel_point(self) -> bool:
        """Local check before invoking (spec 001): the deadline or lease end has passed."""
        if self.cancelled.is_set():
            return True
        with self._lock:
            due = time.monotonic() >= self._cancel_at
        if due:
            self.cancelled.set()
        return due

    def seconds_until_cancel(self) -> float:
        with self._lock:
            return self._cancel_at - time.monotonic()

    def renew(self) -> datetime:
        """Extend the lease; returns the new expiry. Raises LeaseLost (and sets ``cancelled``)
        when another worker holds the Work now. When the cap leaves no lease time, the expiry
        is returned unchanged and ``cancelled`` is set."""
        try:
            db_now, expires = self._renewer(self)
        except LeaseLost:
            self.cancelled.set()
            raise
        self._anchor(db_now, expires)
        if expires <= db_now:
            self.cancelled.set()
        return expires

    def __repr__(self) -> str:
        return (f"<WorkContext {self.work_name} {self.work_version} {self.work_id} "
                f"attempt={self.attempt} permit={self.permit_no}>")


class Watchdog(threading.Thread):
    """Fires ``ctx.cancelled`` at the local cancel point and renews at the cadence."""

    def __init__(self, ctx: WorkContext, cadence_seconds: float | None, using: str) -> None:
        super().__init__(name=f"durable-work-watchdog-{ctx.work_id}", daemon=True)
        self.ctx = ctx
        self.cadence = cadence_seconds
        self.using = using
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join()

    def run(self) -> None:
        renewed = False
        next_renew = float("inf") if self.cadence is None else time.monotonic() + self.cadence
        try:
            while not self.ctx.cancelled.is_set():
                wait = min(self.ctx.seconds_until_cancel(), next_renew - time.monotonic())
                if self._halt.wait(max(0.0, min(wait, threading.TIMEOUT_MAX))):
                    return
                if self.ctx.past_cancel_point():
                    return
                if time.monotonic() >= next_renew:
                    renewed = True
                    try:
                        self.ctx.renew()
                    except LeaseLost:
                        return
                    except Exception:  # a transient database error: try again next cadence
                        log.warning("lease renewal of %s failed", self.ctx, exc_info=True)
                    next_renew = time.monotonic() + self.cadence
        finally:
            if renewed:
                connections[self.using].close()


def run_guarded(fn: Callable[[WorkContext, Any], Any], ctx: WorkContext, payload: Any,
                *, heartbeat: bool, cadence_seconds: float, using: str) -> Any:
    """Run ``fn(ctx, payload)`` under a watchdog; exceptions propagate to the caller."""
    dog = Watchdog(ctx, cadence_seconds if heartbeat else None, using)
    dog.start()
    try:
        return fn(ctx, payload)
    finally:
        dog.stop()
