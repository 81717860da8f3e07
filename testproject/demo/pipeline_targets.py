"""Work definitions of the Work pipeline tests (tests/work/test_pipeline*.py, test_budget.py):
a short lease (the starved-worker test), a mixed bag of fast, slow, failing and deadline-bound
executors, and an async executor. Registered wherever demo.work is (process_work imports it)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from demo.models import Effect
from durable_schedule import work

SECOND = timedelta(seconds=1)

#: A one-second lease: a worker stalled longer than that between admission and invocation must
#: not invoke (docs/work.md "The local lease budget").
SHORT_LEASE = work.ExecutionPolicy.from_retry_policy(work.RetryPolicy(
    maximum_attempts=5, initial_retry_delay=SECOND, maximum_retry_delay=SECOND,
    lease_duration=SECOND, renewal_cadence=SECOND / 2, maximum_lease_lifetime=60 * SECOND))

short_lease = work.define("demo.short_lease", "v1", safety=work.ProviderSafety.IDEMPOTENT,
                          policy=SHORT_LEASE)
short_lease_reconciled = work.define(
    "demo.short_lease_reconciled", "v1",
    safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY, policy=SHORT_LEASE)


@short_lease.executor
@short_lease_reconciled.executor
def touch_once(ctx: work.WorkContext, payload: dict) -> dict:
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="short")
    return {"attempt": ctx.attempt}


@short_lease_reconciled.reconciler
def touched(ctx: work.WorkContext, payload: dict):
    if Effect.objects.filter(work_id=ctx.work_id).exists():
        return work.Applied({"attempt": ctx.attempt})
    return work.NotApplied()


mixed = work.define("demo.mixed", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@mixed.executor
def run_mixed(ctx: work.WorkContext, payload: dict) -> dict:
    """``{"kind": "fast" | "slow" | "fail" | "deadline"}``. Slow and deadline-bound items wait
    on ``ctx.cancelled`` (real time, bounded): the deadline item runs until it is cancelled."""
    kind = payload["kind"]
    if kind == "fail":
        raise ValueError(f"item {payload.get('n')} refused")
    if kind == "slow":
        ctx.cancelled.wait(float(payload.get("seconds", 0.3)))
    if kind == "deadline":
        if not ctx.cancelled.wait(30):
            raise AssertionError("the deadline never cancelled the attempt")
        return {"cancelled": True}
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key=kind)
    return {"kind": kind}


async_sleep = work.define("demo.async_sleep", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@async_sleep.executor
async def sleep_async(ctx: work.WorkContext, payload: dict) -> dict:
    """Sleeps ``seconds`` on the event loop (an I/O-bound job); a deadline cancels it."""
    started = time.monotonic()
    await asyncio.sleep(float(payload.get("seconds", 0.05)))
    return {"slept": round(time.monotonic() - started, 3)}


marked_slow = work.define("demo.marked_slow", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@marked_slow.executor
def run_marked(ctx: work.WorkContext, payload: dict) -> dict:
    """Records that it started (a ``started`` effect row), then works ``seconds`` of real time
    (bounded, cut short by ``ctx.cancelled``): the drain tests stop a worker mid-item."""
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="started")
    ctx.cancelled.wait(min(float(payload.get("seconds", 1.0)), 10.0))
    return {"attempt": ctx.attempt}
