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


gated = work.define("demo.gated_reconcile", "v1", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)


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


# --------------------------------------------------------------------------------------------
# Real-process proofs of the interrupt and drain paths (tests/runner/test_real_worker_*.py).
# Every call leaves rows in demo_effect, so a test counts what ran: "started" when an attempt
# began, "effect" when it did its work. Nothing here sleeps to time anything: the executors wait
# on a row the test inserts, polling the table, and give up after a bound so a broken runtime's
# test process still ends.

RELEASE_KEY = "release"  # the demo_effect row (any work_id) that lets the gated executors finish
STOP_SEEN_KEY = "stop-seen"  # written once by a gated executor that saw its worker told to stop
GATE_BOUND_SECONDS = 60.0


def worker_told_to_stop() -> bool:
    """Whether this worker process has handled its SIGTERM: a ``--loop`` runner installs its
    stop flag's ``set`` as the handler (durable_schedule/runner/loop.py), so the flag says. A
    test that signals a worker reads the executor's report of it to know the stop is in force
    before it lets the running attempts finish."""
    import signal

    flag = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return flag is not None and callable(getattr(flag, "is_set", None)) and flag.is_set()


interrupting_async = work.define(
    "demo.interrupting_async", "v1", safety=work.ProviderSafety.IDEMPOTENT
)


@interrupting_async.executor
async def interrupt_the_first_attempt(ctx: work.WorkContext, payload: dict) -> dict:
    """Attempt 1 raises ``SystemExit(payload["code"])`` (the worker stops); a later attempt
    does the work."""
    await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt, key="started")
    if ctx.attempt == 1:
        raise SystemExit(payload.get("code", 3))
    await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt, key="effect")
    return {"attempt": ctx.attempt}


gated_async = work.define("demo.gated_async", "v1", safety=work.ProviderSafety.IDEMPOTENT)
gated_sync = work.define("demo.gated_sync", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@gated_async.executor
async def run_when_released_async(ctx: work.WorkContext, payload: dict) -> dict:
    import asyncio

    await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt, key="started")
    deadline = time.monotonic() + GATE_BOUND_SECONDS
    reported = False
    while not await Effect.objects.filter(key=RELEASE_KEY).aexists():
        if not reported and worker_told_to_stop():
            await Effect.objects.acreate(
                work_id=ctx.work_id, attempt=ctx.attempt, key=STOP_SEEN_KEY
            )
            reported = True
        if time.monotonic() > deadline:
            raise TimeoutError("never released")
        await asyncio.sleep(0.05)
    await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt, key="effect")
    return {"attempt": ctx.attempt}


@gated_sync.executor
def run_when_released(ctx: work.WorkContext, payload: dict) -> dict:
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="started")
    deadline = time.monotonic() + GATE_BOUND_SECONDS
    reported = False
    while not Effect.objects.filter(key=RELEASE_KEY).exists():
        if not reported and worker_told_to_stop():
            Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key=STOP_SEEN_KEY)
            reported = True
        if time.monotonic() > deadline:
            raise TimeoutError("never released")
        time.sleep(0.05)
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="effect")
    return {"attempt": ctx.attempt}


INTERRUPTING_KEY = "interrupting"  # written by an interrupting attempt right before it raises
interrupting_gated_async = work.define(
    "demo.interrupting_gated_async", "v1", safety=work.ProviderSafety.IDEMPOTENT
)


@interrupting_gated_async.executor
async def interrupt_once_the_slots_are_full(ctx: work.WorkContext, payload: dict) -> dict:
    """Attempt 1 waits until ``payload["slots"]`` attempts have started (every slot of a
    ``--concurrency`` worker taken, the rest of its claim waiting on the gate), then raises
    ``KeyboardInterrupt`` (the worker stops); a later attempt does the work."""
    import asyncio

    await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt, key="started")
    if ctx.attempt == 1:
        deadline = time.monotonic() + GATE_BOUND_SECONDS
        while await Effect.objects.filter(key="started").acount() < payload["slots"]:
            if time.monotonic() > deadline:
                raise TimeoutError("the slots never filled")
            await asyncio.sleep(0.05)
        await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt,
                                     key=INTERRUPTING_KEY)
        raise KeyboardInterrupt
    await Effect.objects.acreate(work_id=ctx.work_id, attempt=ctx.attempt, key="effect")
    return {"attempt": ctx.attempt}
