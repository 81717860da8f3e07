"""The execution context an executor or reconciler receives, and its lease watchdog (issue 3, 4).

``ctx.cancelled`` is a :class:`threading.Event`. It is set when the attempt's execution deadline
arrives, when the lease reaches its cap (maximum lease lifetime or deadline) and cannot be
renewed further, or when the lease is found lost. Cancellation is cooperative
(docs/protocol/work.md): the runtime cannot stop arbitrary code, so an executor that must not act
after the deadline checks
``ctx.cancelled`` (or waits on it) between steps, and the database still refuses a late result.

The local timers are derived from the database clock (the instant the lease or deadline ends
minus the database's "now" at admission or renewal) plus Python's monotonic clock; they only
*warn* the executor. Every decision -- admission, success, retry, expiry -- is made again by the
database clock under the Work lock.

The local budget is anchored on the monotonic instant taken *before* the admission (or renewal)
statement was sent (``budget_origin``), never on when the answer arrived or when the context was
built: the database sampled its "now" after that instant, so the local cancel point is never
later than the lease end the database granted, whatever stalled the worker in between (a GC
pause, a stopped process, a slow host -- docs/work.md "The local lease budget").
:func:`run_guarded` checks the budget immediately before invoking and raises
:class:`OverBudget` instead of calling an executor whose lease already ended.

``ctx.renew()`` extends the lease through the guarded SQL (docs/protocol/work.md: capped by the
attempt's maximum lease lifetime and the absolute deadline, remaining time compared before adding).
With ``heartbeat=True`` (the ``process_work`` default) a watchdog thread renews at the policy's
renewal cadence; its database work uses the thread's own connection, closed when it stops.

The watchdog thread starts lazily: one long-lived starter thread per process watches every
running invocation and starts its :class:`Watchdog` only when the invocation outlives
``LAZY_FRACTION`` of the time to its first duty (the first renewal or the local cancel point).
An invocation that returns sooner (most of them) costs no thread. A started watchdog keeps the
original schedule (renewals counted from the invocation's start) and is stopped and joined
before ``run_guarded`` returns, as before.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from typing import Any

from django.db import connections

from durable_schedule.errors import LeaseLost, TransactionLeftOpen
from durable_schedule.work import aio, clock
from durable_schedule.work.aio import OverBudget
from durable_schedule.work.left_open import open_transactions, roll_back_left_open

__all__ = ["OverBudget", "WorkContext", "run_guarded", "start_async"]

log = logging.getLogger("durable_schedule.work")


class WorkContext:
    """What an executor or reconciler knows about the attempt it serves."""

    def __init__(self, *, scope: str, work_id, work_name: str, work_version: str, attempt: int,
                 permit_no: int, deadline: datetime | None, due_at: datetime,
                 admitted_at: datetime, lease_owner: str, lease_generation: int,
                 lease_expires_at: datetime, reconciling: bool,
                 renewer: Callable[[WorkContext], tuple[datetime, datetime]],
                 budget_origin: float | None = None, using: str | None = None) -> None:
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
        #: The database alias the runtime serves this attempt from (None: not known).
        self.using = using
        self.cancelled = threading.Event()
        self._renewer = renewer
        self._lock = threading.Lock()
        self._lease_expires_at = lease_expires_at
        self._cancel_at = float("inf")
        self._lease_end_at = float("inf")
        self._after_outcome: list[Callable[[], None]] = []
        self._anchor(admitted_at, lease_expires_at,
                     clock.monotonic() if budget_origin is None else budget_origin)

    @property
    def lease_expires_at(self) -> datetime:
        with self._lock:
            return self._lease_expires_at

    def _anchor(self, db_now: datetime, lease_expires_at: datetime, origin: float) -> None:
        """Map the lease end (and the deadline, for attempts) to a local monotonic instant,
        counted from ``origin``: the monotonic instant before the statement that read
        ``db_now`` was sent."""
        ends = [lease_expires_at]
        if self.deadline is not None and not self.reconciling:
            ends.append(self.deadline)
        seconds = (min(ends) - db_now).total_seconds()
        lease_seconds = (lease_expires_at - db_now).total_seconds()
        with self._lock:
            self._lease_expires_at = lease_expires_at
            self._cancel_at = origin + seconds
            self._lease_end_at = origin + lease_seconds

    def past_cancel_point(self) -> bool:
        """Local check before invoking (docs/protocol/work.md): the deadline or lease end has
        passed."""
        if self.cancelled.is_set():
            return True
        with self._lock:
            due = clock.monotonic() >= self._cancel_at
        if due:
            self.cancelled.set()
        return due

    def seconds_until_cancel(self) -> float:
        with self._lock:
            return self._cancel_at - clock.monotonic()

    def seconds_until_lease_end(self) -> float:
        """Seconds until the lease this process holds ends, on the local clock (the cancel
        point is at the lease end or, for an attempt, at the deadline when that is sooner)."""
        with self._lock:
            return self._lease_end_at - clock.monotonic()

    def renew(self) -> datetime:
        """Extend the lease; returns the new expiry. Raises LeaseLost (and sets ``cancelled``)
        when another worker holds the Work now. When the cap leaves no lease time, the expiry
        is returned unchanged and ``cancelled`` is set."""
        origin = clock.monotonic()  # before the renewal statement is sent
        try:
            db_now, expires = self._renewer(self)
        except LeaseLost:
            self.cancelled.set()
            raise
        self._anchor(db_now, expires, origin)
        if expires <= db_now:
            self.cancelled.set()
        return expires

    def after_outcome(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once this attempt's outcome (for a reconciler: its verdict) is
        recorded (committed), in the thread that records it; never if it is not (the pass
        failed first, or the attempt was abandoned or interrupted). A batch records its
        outcomes together after its last attempt, so what the store decides (a success
        recorded at or after the deadline is quarantined) is known only then: the tasks
        backend sends ``task_finished`` from here."""
        self._after_outcome.append(fn)

    def outcome_followups(self) -> tuple[Callable[[], None], ...]:
        return tuple(self._after_outcome)

    async def arenew(self) -> datetime:
        """:meth:`renew` for an ``async def`` executor or reconciler (same caps, same
        LeaseLost): ``renew()`` is a synchronous database call, which Django refuses on the
        event loop. Runs on a thread of asgiref's pool whose connection is closed after, so
        the renewal never waits behind the executors' ORM thread."""
        from asgiref.sync import sync_to_async

        return await sync_to_async(self._renew_and_close, thread_sensitive=False)()

    def _renew_and_close(self) -> datetime:
        try:
            return self.renew()
        finally:
            connections.close_all()  # this pool thread serves no one else's connection

    def __repr__(self) -> str:
        return (f"<WorkContext {self.work_name} {self.work_version} {self.work_id} "
                f"attempt={self.attempt} permit={self.permit_no}>")


class Watchdog(threading.Thread):
    """Fires ``ctx.cancelled`` at the local cancel point and renews at the cadence."""

    def __init__(self, ctx: WorkContext, cadence_seconds: float | None, using: str, *,
                 started_at: float | None = None) -> None:
        super().__init__(name=f"durable-work-watchdog-{ctx.work_id}", daemon=True)
        self.ctx = ctx
        self.cadence = cadence_seconds
        self.using = using
        #: The monotonic instant the renewal cadence counts from (default: when run() starts).
        self.started_at = started_at
        self._halt = threading.Event()

    def stop(self, *, wait: bool = True) -> None:
        self._halt.set()
        if wait and self.is_alive():
            self.join()

    def run(self) -> None:
        renewed = False
        origin = time.monotonic() if self.started_at is None else self.started_at
        next_renew = float("inf") if self.cadence is None else origin + self.cadence
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


#: A watchdog starts once an invocation has run this fraction of the time to its first duty.
LAZY_FRACTION = 0.5


class _Starter(threading.Thread):
    """Starts the watchdogs of invocations that run long enough to need one (one per process)."""

    def __init__(self) -> None:
        super().__init__(name="durable-work-watchdog-starter", daemon=True)
        self.pid = os.getpid()
        self.cond = threading.Condition()
        self.heap: list[tuple[float, int]] = []
        self.pending: dict[int, tuple[WorkContext, float | None, str, float]] = {}
        self.started: dict[int, Watchdog] = {}
        self.wake_at = float("inf")

    def watch(self, ctx: WorkContext, cadence: float | None, using: str) -> int:
        now = time.monotonic()
        first = ctx.seconds_until_cancel() if cadence is None else min(
            cadence, ctx.seconds_until_cancel())
        start_at = now + max(0.0, first) * LAZY_FRACTION
        key = next(_keys)
        with self.cond:
            self.pending[key] = (ctx, cadence, using, now)
            heapq.heappush(self.heap, (start_at, key))
            if start_at < self.wake_at:
                self.cond.notify()
        return key

    def unwatch(self, key: int, *, wait: bool = True) -> None:
        with self.cond:
            self.pending.pop(key, None)
            dog = self.started.pop(key, None)
        if dog is not None:
            dog.stop(wait=wait)

    def run(self) -> None:
        with self.cond:
            while True:
                now = time.monotonic()
                while self.heap and (self.heap[0][0] <= now or self.heap[0][1] not in
                                     self.pending):
                    _, key = heapq.heappop(self.heap)
                    entry = self.pending.pop(key, None)
                    if entry is not None:
                        ctx, cadence, using, origin = entry
                        dog = Watchdog(ctx, cadence, using, started_at=origin)
                        self.started[key] = dog
                        dog.start()
                self.wake_at = self.heap[0][0] if self.heap else float("inf")
                wait = None if not self.heap else max(0.0, min(self.wake_at - now,
                                                              threading.TIMEOUT_MAX))
                self.cond.wait(wait)


_keys = itertools.count()
_starter: _Starter | None = None
_starter_lock = threading.Lock()


def _the_starter() -> _Starter:
    global _starter
    starter = _starter
    if starter is not None and starter.pid == os.getpid() and starter.is_alive():
        return starter
    with _starter_lock:
        if _starter is None or _starter.pid != os.getpid() or not _starter.is_alive():
            _starter = _Starter()
            _starter.start()
        return _starter


def run_guarded(fn: Callable[[WorkContext, Any], Any], ctx: WorkContext, payload: Any,
                *, heartbeat: bool, cadence_seconds: float, using: str,
                held: list[int] | None = None) -> Any:
    """Run ``fn(ctx, payload)`` under a watchdog (started lazily, see the module docstring);
    exceptions propagate to the caller. The watchdog, if it started, is stopped and joined --
    unless ``held`` is a list: then the watch is appended to it and keeps the lease renewed
    until the caller passes it to :func:`unwatch_all` (a sequential batch, until the group
    commit). An ``async def`` ``fn`` runs on the process's event loop (:mod:`.aio`); this
    call waits."""
    if aio.is_async(fn):
        return start_async(fn, ctx, payload, heartbeat=heartbeat,
                           cadence_seconds=cadence_seconds, using=using, held=held).result()
    starter = _the_starter()
    key = starter.watch(ctx, cadence_seconds if heartbeat else None, using)
    before = open_transactions()
    try:
        if ctx.past_cancel_point():  # immediately before invoking (docs/work.md)
            raise OverBudget(repr(ctx))
        result = fn(ctx, payload)
    except BaseException:
        roll_back_left_open(before)  # the executor's own error is the one to report
        raise
    finally:
        if held is None:
            starter.unwatch(key)
        else:
            held.append(key)
    left = roll_back_left_open(before)
    if left:
        raise TransactionLeftOpen(
            "the executor returned with a transaction open on its connection; it was rolled "
            "back", aliases=left)
    return result


def unwatch_all(held: list[int]) -> None:
    """Stop the watches :func:`run_guarded` kept in ``held`` (their outcomes are committed, or
    will not be) and empty it."""
    starter = _the_starter()
    while held:
        starter.unwatch(held.pop())


def start_async(fn: Callable[[WorkContext, Any], Any], ctx: WorkContext, payload: Any, *,
                heartbeat: bool, cadence_seconds: float, using: str,
                gate: aio.Gate | None = None, held: list[int] | None = None) -> Future:
    """Start an ``async def`` executor on the event loop under a watchdog; returns its future
    (OverBudget when the budget ran out before it could start). The watchdog is told to stop
    when the future settles (not joined: the loop thread must not wait for a renewal)."""
    starter = _the_starter()
    key = starter.watch(ctx, cadence_seconds if heartbeat else None, using)
    if ctx.past_cancel_point():  # immediately before invoking (docs/work.md)
        starter.unwatch(key)
        refused: Future = Future()
        refused.set_exception(OverBudget(repr(ctx)))
        return refused
    future = aio.submit(fn, ctx, payload, gate)
    if held is None:
        future.add_done_callback(lambda _f: starter.unwatch(key, wait=False))
    else:  # kept renewed until the caller's commit (run_guarded)
        held.append(key)
    return future
