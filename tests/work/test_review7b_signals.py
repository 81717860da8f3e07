"""Control-flow signals that leak out of an executor's own code are that attempt's failure:
``GeneratorExit`` (sync or async) and an async executor's own ``CancelledError`` (an ``await`` of
a future something else cancelled). Before the fix each of them ended the worker's pass (at
``--concurrency 2`` also the CancelledError, which at 1 was recorded as a different class), and
the attempt stayed ``running`` until its lease ran out -- a poison pill that stopped a worker
on every retry. KeyboardInterrupt and SystemExit still stop the worker (unchanged)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.work import codec
from tests.conftest import T0
from tests.work.conftest import Crash, run_pass, work_row

pytestmark = pytest.mark.django_db

MIN = timedelta(minutes=1)


def sync_generator_exit(ctx, payload):
    raise GeneratorExit


async def async_generator_exit(ctx, payload):
    raise GeneratorExit


async def awaits_a_cancelled_future(ctx, payload):
    future = asyncio.get_running_loop().create_future()
    future.cancel()  # as a shared client's shutdown would cancel it
    await future


def _accept(d) -> str:
    return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize(("executor", "raised"), [
    (sync_generator_exit, "builtins.GeneratorExit"),
    (async_generator_exit, "builtins.GeneratorExit"),
    (awaits_a_cancelled_future, "asyncio.exceptions.CancelledError"),
], ids=["sync-generator-exit", "async-generator-exit", "async-own-cancelled"])
def test_signal__escaping_the_executor_is_a_failed_attempt(clock, define, executor, raised,
                                                           concurrency):
    d = define("t.signal")
    d.executor(executor)
    work_id = _accept(d)
    counts = run_pass(concurrency=concurrency)
    assert (counts.admitted, counts.retried) == (1, 1)
    state, last_error = work_row(work_id, "state", "last_error")
    assert state == "pending"
    assert codec.loads(last_error)["class"] == raised
    [first] = work.attempts("tenant-a", work_id)
    assert (first.outcome, first.exception_class) == ("failed", raised)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupt__still_stops_the_worker(clock, define, interrupt):
    d = define("t.interrupt")

    @d.executor
    def run(ctx, payload):
        raise interrupt

    work_id = _accept(d)
    with pytest.raises(interrupt):
        run_pass()
    assert work_row(work_id, "state") == ("running",)  # recovered after its lease, as a crash


def test_reconciler__a_generator_exit_is_unknown_and_suspends(clock, define):
    d = define("t.signal_reconcile", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    crash = [True]

    @d.executor
    def run(ctx, payload):
        if crash:
            crash.pop()
            raise Crash
        return {"ok": True}

    @d.reconciler
    def reconcile(ctx, payload):
        raise GeneratorExit

    work_id = _accept(d)
    with pytest.raises(Crash):
        run_pass()
    clock.set(T0 + 10 * MIN)  # past the crashed attempt's lease
    counts = run_pass()
    assert (counts.reconciled, counts.suspended) == (1, 1)
    state, reason, last_error = work_row(work_id, "state", "suspension_reason", "last_error")
    assert (state, reason) == ("suspended", "reconciliation_unknown")
    assert codec.loads(last_error)["class"] == "builtins.GeneratorExit"


class AsyncExecutor:
    """An executor class whose ``__call__`` is ``async def`` (inherited, as in a base class)."""

    async def __call__(self, ctx, payload):
        await asyncio.sleep(0)
        return {"attempt": ctx.attempt}


class ChildExecutor(AsyncExecutor):
    pass


@pytest.mark.parametrize("concurrency", [1, 2])
def test_async_executor_object__is_awaited_on_the_loop(clock, define, concurrency):
    # Before: called as a sync function, its coroutine was returned unawaited (never run) and
    # every attempt failed with "a value JSON cannot hold" (type coroutine).
    d = define("t.async_object")
    d.executor(ChildExecutor())
    work_id = _accept(d)
    counts = run_pass(concurrency=concurrency)
    assert (counts.admitted, counts.succeeded) == (1, 1)
    assert codec.loads(work_row(work_id, "result")[0]) == {"attempt": 1}
