"""A synchronous executor (or reconciler) that returns a coroutine -- a lambda or a plain
wrapper around an ``async def``, or an ``async def`` returning another coroutine -- has not done
its work: the coroutine was never run. The attempt fails with DS260 naming the mistake (before:
DS209 "result contains a value JSON cannot hold [type='coroutine'] -- Pass a JSON-encodable
payload", and Python's "coroutine ... was never awaited" warning later from the garbage
collector, because the coroutine was never closed); a reconciler's is Unknown (suspends)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.work import codec
from tests.work.conftest import Crash, run_pass, work_row

pytestmark = pytest.mark.django_db


def _accept(d) -> str:
    return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("shape", ["sync-def", "async-def"])
def test_executor__returning_a_coroutine_fails_with_ds260(clock, define, concurrency, shape):
    d = define("t.returns_coroutine")
    ran: list[int] = []
    made: list = []

    async def body(ctx, payload):
        ran.append(ctx.attempt)
        return {"ok": True}

    if shape == "sync-def":

        def executor(ctx, payload):
            made.append(body(ctx, payload))
            return made[-1]
    else:

        async def executor(ctx, payload):
            made.append(body(ctx, payload))
            return made[-1]

    d.executor(executor)
    work_id = _accept(d)
    counts = run_pass(concurrency=concurrency)
    assert (counts.admitted, counts.retried, counts.succeeded) == (1, 1, 0)
    state, last_error = work_row(work_id, "state", "last_error")
    error = codec.loads(last_error)
    assert state == "pending"
    assert error["code"] == "DS260", error
    assert error["class"] == "durable_schedule.errors.ExecutorReturnedAwaitable"
    assert "returned coroutine" in error["message"] and "async def" in error["message"]
    [coroutine] = made
    assert ran == []  # never run ...
    assert coroutine.cr_frame is None  # ... and closed: no "never awaited" warning later
    [attempt] = work.attempts("tenant-a", work_id)
    assert (attempt.outcome, attempt.exception_class) == (
        "failed",
        "durable_schedule.errors.ExecutorReturnedAwaitable",
    )


def test_reconciler__returning_a_coroutine_is_unknown_and_suspends(clock, define):
    d = define("t.reconciler_coroutine", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    crash = [True]
    made: list = []

    @d.executor
    def run(ctx, payload):
        if crash:
            crash.pop()
            raise Crash
        return {"ok": True}

    async def verdict(ctx, payload):
        return work.NotApplied()

    @d.reconciler
    def reconcile(ctx, payload):
        made.append(verdict(ctx, payload))
        return made[-1]

    work_id = _accept(d)
    with pytest.raises(Crash):
        run_pass()
    clock.advance(timedelta(minutes=10))  # past the crashed attempt's lease
    counts = run_pass()
    assert (counts.reconciled, counts.suspended) == (1, 1)
    state, reason, last_error = work_row(work_id, "state", "suspension_reason", "last_error")
    assert (state, reason) == ("suspended", "reconciliation_unknown")
    assert codec.loads(last_error)["code"] == "DS260"
    assert made[0].cr_frame is None
