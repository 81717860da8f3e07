"""Work definitions used by the --loop runner tests (tests/runner/)."""

from __future__ import annotations

import time

from demo.models import Effect
from durable_schedule import work

slow = work.define("demo.slow", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@slow.executor
def run_slowly(ctx: work.WorkContext, payload: dict) -> dict:
    # Real time on purpose: the runner tests stop a loop while an executor is busy. Bounded.
    deadline = time.monotonic() + min(float(payload.get("seconds", 1.0)), 10.0)
    while time.monotonic() < deadline and not ctx.cancelled.is_set():
        time.sleep(0.05)
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="slow")
    return {"slept": payload.get("seconds", 1.0)}


stubborn = work.define("demo.stubborn_async", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@stubborn.executor
async def ignore_cancellation(ctx: work.WorkContext, payload: dict) -> dict:
    # Catches every cancellation the runtime sends and keeps going (bounded by real time, so a
    # broken runtime's test process still ends): the runtime must stop waiting for it.
    import asyncio

    deadline = time.monotonic() + min(float(payload.get("seconds", 60.0)), 120.0)
    while time.monotonic() < deadline:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            pass
    return {"too": "late"}


gated = work.define("demo.gated_reconcile", "v1",
                    safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)


@gated.executor
def crash_then_run(ctx: work.WorkContext, payload: dict) -> dict:
    if ctx.attempt == 1:
        raise KeyboardInterrupt  # the first attempt's worker dies: permit 1 stays unresolved
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="gated-run")
    return {"attempt": ctx.attempt}


@gated.reconciler
def block_until_released(ctx: work.WorkContext, payload: dict):
    # A synchronous reconciler that ignores ctx.cancelled and blocks until the test inserts the
    # "release" effect row (bounded by real time, so a broken runtime's test process still ends).
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        if Effect.objects.filter(work_id=ctx.work_id, key="release").exists():
            return work.NotApplied()
        time.sleep(0.05)
    return work.Unknown("never released")
