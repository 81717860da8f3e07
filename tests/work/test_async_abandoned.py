"""An async executor that catches the runtime's cancellation and never returns.

Before: after cancelling the task (deadline, lease end, lease loss) the runtime awaited it
without bound (``return await task``), so the pass -- and a stopping worker's drain -- waited
forever. Now it waits a bounded grace (``aio.CANCEL_GRACE_SECONDS``, or until the lease ends
if later), then stops waiting: nothing is recorded, the attempt is left as a crashed worker
leaves it (lease held until it expires, permit admitted and unresolved), the pass counts it as
``abandoned`` and finishes. The runtime's local clock is the seam (work/clock.py): the test
moves it past the cancel point instead of waiting for a deadline."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest

from durable_schedule.work import aio, clock
from durable_schedule.work.concurrency import shutdown_pool
from tests.conftest import T0
from tests.work.conftest import history, permits, rows, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_pool():
    yield
    shutdown_pool()


def stubborn(define, name: str, release: threading.Event, jump: list[float]):
    """An async executor that swallows every cancellation until ``release`` is set (set by the
    test at its end, so no task outlives it); its first run moves the local clock far ahead,
    past the attempt's cancel point and lease end. From attempt 2 on it answers at once."""
    d = define(name)

    @d.executor
    async def run(ctx, payload):
        if ctx.attempt > 1:
            return {"attempt": ctx.attempt}
        jump[0] = 10_000.0
        while not release.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                payload.setdefault("cancelled", 0)
                payload["cancelled"] += 1  # caught and ignored
        return {"too": "late"}

    return d


def in_thread(fn):
    """Run ``fn`` in a thread; its result, or a failure naming a pass that never returned
    (a liveness bound, not a timing assertion: a broken runtime hangs forever)."""
    box: list = []
    worker = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the pass never returned"
    return box[0]


@pytest.mark.parametrize("concurrency", [1, 2])
def test_pass__stops_waiting_for_a_task_that_ignores_its_cancellation(
        committed_clock, define, monkeypatch, concurrency):
    monkeypatch.setattr(aio, "CANCEL_GRACE_SECONDS", 0.2, raising=False)
    release, jump = threading.Event(), [0.0]
    d = stubborn(define, f"test.stubborn{concurrency}", release, jump)
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    try:
        with clock.controlled(lambda: time.monotonic() + jump[0]):
            counts = in_thread(lambda: run_pass(concurrency=concurrency))
    finally:
        release.set()
    assert (counts.claimed, counts.admitted, counts.abandoned) == (1, 1, 1)
    assert counts.succeeded == counts.failed == counts.retried == 0
    # Left exactly as a crashed worker leaves it: leased by this worker, permit unresolved.
    state, owner, expires = work_row(work_id, "state", "lease_owner", "lease_expires_at")
    assert (state, owner) == ("running", "test-worker") and expires is not None
    assert permits(work_id) == [(1, 1, None, None)]
    # After the lease expires the next claim recovers the attempt, as after a crash: the
    # lost attempt of an idempotent Work is retried (no reconciler needed); the retry succeeds.
    committed_clock.set(expires + timedelta(seconds=1))
    again = in_thread(lambda: run_pass(concurrency=concurrency))
    assert (again.recovered, again.abandoned) == (1, 0), again
    assert history(work_id) == ["accepted", "admitted", "retry_scheduled"]
    [(due,)] = rows("select d.due_at from durable_work_dispatch d join durable_work w"
                    " on w.id = d.work_ref where w.work_id = %s", (work_id,))
    committed_clock.set(max(due, expires + timedelta(seconds=1)))
    assert in_thread(lambda: run_pass(concurrency=concurrency)).succeeded == 1
    assert work_row(work_id, "state", "attempt") == ("succeeded", 2)
    assert T0 < expires
