"""An ``async def`` executor (or reconciler) that raises ``KeyboardInterrupt`` or ``SystemExit``
stops the worker exactly as a synchronous one does: the pass raises it, the attempt records no
outcome (recovered after its lease, as a crash), and the process's event loop keeps serving
async executors. Before: raised inside a task, asyncio re-raised it out of ``run_forever``, the
loop thread died and the attempt's future never settled -- the pass, and a draining ``--loop``
worker with it, waited forever."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from tests.work.conftest import Crash, pass_in_thread, permits, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_async_interrupt__stops_the_pass_and_the_loop_survives(
    clock, define, interrupt, concurrency
):
    d = define("t.async_interrupt")
    raising = [True]

    @d.executor
    async def run(ctx, payload):
        if raising:
            raising.pop()
            raise interrupt
        return {"attempt": ctx.attempt}

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    finished, got = pass_in_thread(concurrency=concurrency)
    assert finished, "the pass hung after the async executor's interrupt"
    assert isinstance(got, interrupt), got
    assert work_row(work_id, "state") == ("running",)  # recovered after its lease
    assert [p[2] for p in permits(work_id)] == [None]
    clock.advance(timedelta(minutes=10))  # past the interrupted attempt's lease
    finished, got = pass_in_thread(concurrency=concurrency)
    assert finished and isinstance(got, work.WorkPassCounts), got
    assert (got.recovered, got.retried) == (1, 1)  # the lost attempt counts as failed
    clock.advance(timedelta(hours=1))  # past its retry backoff
    finished, got = pass_in_thread(concurrency=concurrency)
    assert finished and isinstance(got, work.WorkPassCounts), got
    assert got.succeeded == 1  # the event loop still runs async executors
    assert work_row(work_id, "state") == ("succeeded",)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_async_reconciler_interrupt__stops_the_pass(clock, define, interrupt):
    d = define("t.async_reconciler_interrupt", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    crash = [True]

    @d.executor
    def run(ctx, payload):
        if crash:
            crash.pop()
            raise Crash
        return {"ok": True}

    @d.reconciler
    async def reconcile(ctx, payload):
        raise interrupt

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    clock.advance(timedelta(minutes=10))  # past the crashed attempt's lease
    finished, got = pass_in_thread()
    assert finished, "the pass hung after the async reconciler's interrupt"
    assert isinstance(got, interrupt), got  # not an Unknown verdict: the worker stops
    assert work_row(work_id, "state") == ("running",)
