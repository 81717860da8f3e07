"""Async executors (issue 16 item 3): an ``async def`` executor runs on the worker process's one
event loop, many at once, and is cancelled at its deadline or lease end.

The loop runs in one daemon thread per process (started on first use, restarted after a fork).
:func:`submit` schedules ``fn(ctx, payload)`` on it and returns a
:class:`concurrent.futures.Future`; the Work pipeline (docs/work.md "Concurrency") counts such an
attempt against ``--concurrency`` like a thread-run one, but it occupies no thread while it
awaits I/O. Unlike a synchronous executor, an async one *can* be stopped: a supervisor task
watches the attempt's local cancel point (:meth:`WorkContext.seconds_until_cancel`, moved by
every lease renewal) and ``ctx.cancelled`` (set when the lease is lost), and cancels the task
when either fires. The attempt then fails with :class:`~durable_schedule.errors.AttemptCancelled`
(DS226) and the retry policy decides, by the database clock, what follows (at the deadline:
``expired``).

Executors on the loop must not block it: call the ORM through ``asgiref.sync.sync_to_async``
(Django's rule for async code) or use an async client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import threading
from collections.abc import Callable
from types import FunctionType
from typing import Any

from durable_schedule.errors import AttemptCancelled, TransactionLeftOpen
from durable_schedule.work.broken_connections import (
    check_sync_connections_before_job,
    drop_broken_sync_connections,
)


def is_async(fn: Callable[..., Any]) -> bool:
    """``fn`` is an ``async def`` function, or a callable object whose ``__call__`` is one (an
    executor class): either returns a coroutine the loop must await. A sync call of such an
    object would return the coroutine unawaited and fail the attempt without running it."""
    if inspect.iscoroutinefunction(fn):
        return True
    if type(fn) is FunctionType or inspect.isroutine(fn):  # the usual executor: one check
        return False
    return inspect.iscoroutinefunction(inspect.getattr_static(type(fn), "__call__", None))


class OverBudget(Exception):
    """The local lease/deadline budget ran out before the executor was invoked: it is not
    invoked (a typed outcome, recorded as ``not_invoked``; never an executor failure)."""


class NotStarted(Exception):  # noqa: N818 - a typed outcome, not an error
    """The pass stopped (SIGTERM, an interrupt, a pipeline error) while the attempt waited for a
    free slot of its :class:`Gate`: it is not started (recorded as ``handed_back``, as a
    synchronous attempt a stopping pass did not start)."""


class Gate:
    """At most ``size`` async executors run at once; the others wait, admitted, for a slot
    (the pipeline admits a little ahead so no slot waits for a database round trip).
    ``stopped()`` true when a slot frees: the waiting attempt is not started (NotStarted).
    Once an attempt's ``KeyboardInterrupt`` / ``SystemExit`` escapes (:meth:`interrupt`, called
    while that attempt still holds its slot) no waiting attempt starts either, and
    ``on_interrupt`` tells the pass in the same step."""

    def __init__(self, size: int, stopped: Callable[[], bool] | None = None,
                 on_interrupt: Callable[[], None] | None = None) -> None:
        self.size = size
        self.stopped = stopped
        self.on_interrupt = on_interrupt
        self.interrupted = False
        self._semaphore: asyncio.Semaphore | None = None

    def semaphore(self) -> asyncio.Semaphore:  # created on the loop's thread, on first use
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.size)
        return self._semaphore

    def closed(self) -> bool:
        """A waiting attempt that gets a slot now is not started."""
        return self.interrupted or (self.stopped is not None and self.stopped())

    def interrupt(self) -> None:
        """An interrupt escaped an attempt that holds a slot: close the gate before the slot
        is released (on the loop's thread, so no waiting attempt is woken in between)."""
        self.interrupted = True
        if self.on_interrupt is not None:
            self.on_interrupt()


class EscapedCancel(Exception):  # noqa: N818 - it carries a cancellation, it is not an error
    """Carries an async executor's *own* ``CancelledError`` (an ``await`` of something another
    task cancelled) out of the loop as the attempt's failure: raised as is, it would cancel the
    loop's future instead, and the pipeline would read that as the worker's own failure.
    ``raised`` is the executor's exception, which the runtime records."""

    def __init__(self, raised: asyncio.CancelledError) -> None:
        super().__init__("the async executor raised CancelledError (not the runtime's cancel)")
        self.raised = raised


class EscapedInterrupt(Exception):  # noqa: N818 - it carries an interrupt, it is not an error
    """Carries a ``KeyboardInterrupt`` or ``SystemExit`` an async executor (or reconciler)
    raised out of the loop. Raised as is inside a task, asyncio re-raises it out of
    ``run_forever``: the loop thread died and every attempt awaiting on it -- and the pass
    waiting for them -- waited forever. Carried out, it stops the worker as a synchronous
    executor's does (``raised`` is re-raised in the pipeline's thread)."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(f"the async executor raised {type(raised).__name__}")
        self.raised = raised


async def _interrupts_carried(fn: Callable[..., Any], ctx, payload: Any) -> Any:
    try:
        return await fn(ctx, payload)
    except (KeyboardInterrupt, SystemExit) as exc:
        raise EscapedInterrupt(exc) from exc


class Abandoned(Exception):  # noqa: N818 - the runtime stopped waiting, nothing failed
    """An async executor (or reconciler) cancelled by the runtime that did not finish within
    the grace (:data:`CANCEL_GRACE_SECONDS`, or until its lease ends if later): the runtime
    stops waiting for it and records nothing, so the attempt is left exactly as a crashed
    worker leaves it -- its lease expires and the next claim reconciles before any retry
    (docs/work.md "Concurrency"). The task itself may still be running on the loop."""

    def __init__(self, ctx, grace: float) -> None:
        super().__init__(f"the async executor of {ctx!r} did not finish within {grace:.1f}s "
                         "of its cancellation; the runtime stopped waiting for it")
        self.work_id, self.attempt, self.grace = ctx.work_id, ctx.attempt, grace


#: The least time a cancelled async task is given to finish (a task that catches the
#: cancellation may still answer); a task whose lease ends later gets until its lease ends.
CANCEL_GRACE_SECONDS = 5.0

#: Longest wait between two looks at ``ctx.cancelled`` (a lost lease) while a task runs.
POLL_SECONDS = 0.25


class _LoopThread(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="durable-work-async-loop", daemon=True)
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self.ready.set)
        self.loop.run_forever()


_thread: _LoopThread | None = None
_lock = threading.Lock()


def _the_loop() -> asyncio.AbstractEventLoop:
    global _thread
    with _lock:
        if _thread is None or _thread.pid != os.getpid() or not _thread.is_alive():
            _thread = _LoopThread()
            _thread.start()
            _thread.ready.wait()
        return _thread.loop


async def _supervise(fn: Callable[..., Any], ctx, payload: Any, gate: Gate | None) -> Any:
    try:
        if gate is None:
            await check_sync_connections_before_job()
            return await _run_closing(fn, ctx, payload)
        async with gate.semaphore():
            if gate.closed():
                raise NotStarted(repr(ctx))
            await check_sync_connections_before_job()
            try:
                return await _run_closing(fn, ctx, payload)
            except EscapedInterrupt:
                # Close the gate while this attempt still holds its slot: its future settles
                # (and tells the pass) only later, after a waiting attempt woken by the
                # release could have started.
                gate.interrupt()
                raise
    except (OverBudget, NotStarted):
        raise
    except Exception:
        # A dead connection shows as the executor's error: only this attempt fails on it.
        await drop_broken_sync_connections()
        raise


async def _run_closing(fn: Callable[..., Any], ctx, payload: Any) -> Any:
    """``_run``, then roll back a transaction left open in the thread the async executors'
    ORM calls share (DS285, docs/work.md "Execution"): left there, it would hold every later
    async executor's writes, never committed. An executor that returned fails with DS285; one
    that raised keeps its own error. Async executors that overlap share that thread: the one
    that finishes while another's transaction is open there fails for it."""
    try:
        result = await _run(fn, ctx, payload)
    except (OverBudget, AttemptCancelled, Abandoned, EscapedInterrupt):
        # Not run, or cancelled: a sync call it started may still run on that thread, and
        # the hop would wait for it, past the bounded grace (the next job's check finds it).
        raise
    except BaseException:
        await _roll_back_sync_left_open()
        raise
    left = await _roll_back_sync_left_open()
    if left:
        raise TransactionLeftOpen(
            "the async executor returned with a transaction open on the connection of its "
            "ORM thread (sync_to_async); it was rolled back", aliases=left)
    return result


async def _roll_back_sync_left_open() -> list[str]:
    from asgiref.sync import sync_to_async

    from durable_schedule.work.left_open import roll_back_any_left_open

    try:
        return await sync_to_async(roll_back_any_left_open, thread_sensitive=True)()
    except Exception:  # noqa: BLE001 -- best effort; the rollback itself logs what failed
        return []


async def _run(fn: Callable[..., Any], ctx, payload: Any) -> Any:
    if ctx.past_cancel_point():  # immediately before invoking (docs/work.md)
        raise OverBudget(repr(ctx))
    task = asyncio.ensure_future(_interrupts_carried(fn, ctx, payload))
    while True:
        remaining = ctx.seconds_until_cancel()
        if remaining <= 0 or ctx.cancelled.is_set():
            ctx.past_cancel_point()  # sets ctx.cancelled for code that also watches the event
            task.cancel()
            # A task that catches the cancellation may still answer, within a bounded grace:
            # one that never returns must not hold the pass, or a stopping worker, forever.
            grace = max(CANCEL_GRACE_SECONDS, ctx.seconds_until_lease_end())
            finished, _ = await asyncio.wait({task}, timeout=grace)
            if not finished:
                raise Abandoned(ctx, grace)
            try:
                return task.result()
            except asyncio.CancelledError:
                raise AttemptCancelled(
                    "the async executor was cancelled at its deadline or lease end",
                    work_id=str(ctx.work_id), attempt=ctx.attempt) from None
        done, _ = await asyncio.wait({task}, timeout=min(remaining, POLL_SECONDS))
        if done:
            try:
                return task.result()
            except asyncio.CancelledError as exc:  # the runtime did not cancel it (above)
                raise EscapedCancel(exc) from exc


def submit(fn: Callable[..., Any], ctx, payload: Any,
           gate: Gate | None = None) -> concurrent.futures.Future:
    """Run ``await fn(ctx, payload)`` on the process's event loop under its cancel point,
    once ``gate`` (if any) has a free slot; OverBudget when the budget ran out before."""
    return asyncio.run_coroutine_threadsafe(_supervise(fn, ctx, payload, gate), _the_loop())
