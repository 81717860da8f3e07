"""In a sequential batch an attempt that finished waits for the batch's group commit, while the
attempts after it run. Its lease was no longer renewed once its executor returned, so one slow
sibling (longer than that lease) let the lease lapse: another worker took the finished attempt
over and ran it again, and its real outcome was fenced. A finished attempt's lease is now kept
renewed (its watchdog runs on) until its outcome is committed."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections

from durable_schedule import work
from tests.work.conftest import HANG_BOUND_SECONDS, permits, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)

SECOND = timedelta(seconds=1)
RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1),
                         lease_duration=2 * SECOND, renewal_cadence=timedelta(seconds=0.2),
                         maximum_lease_lifetime=timedelta(minutes=5))


def test_a_slow_sibling_does_not_let_a_finished_attempts_lease_lapse(committed_clock, define):
    d = define("test.slow_sibling", policy=work.ExecutionPolicy(RETRY))
    calls: list = []
    other: list = []

    def other_worker() -> None:
        try:
            other.append(run_pass(lease_owner="other-worker"))
        finally:
            connections.close_all()

    @d.executor
    def run(ctx, payload):
        calls.append(ctx.work_id)
        if len(calls) == 1:
            return {"fast": True}
        # The slow sibling: the database clock moves past the first one's lease end ...
        committed_clock.advance(3 * SECOND)
        ctx.cancelled.wait(1.0)  # ... long enough for the watchdogs' renewals (0.2 s)
        thread = threading.Thread(target=other_worker, daemon=True)
        thread.start()
        thread.join(HANG_BOUND_SECONDS)
        return {"slow": True}

    ids = [d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={}).work_id
           for k in ("a", "b")]
    counts = run_pass(batch=2, heartbeat=True)
    assert other and other[0].claimed == 0, other  # nothing was free to take over
    assert counts.succeeded == 2 and counts.lost == 0
    assert len(calls) == 2
    for work_id in ids:
        assert work_row(work_id, "state") == ("succeeded",)
        assert permits(work_id) == [(1, 1, "succeeded", "executor")]


def test_a_finished_async_attempt_keeps_its_lease_too(committed_clock, define):
    """The same for an ``async def`` executor, which a sequential pass waits for on the loop."""
    import asyncio

    from asgiref.sync import SyncToAsync

    d = define("test.slow_sibling_async", policy=work.ExecutionPolicy(RETRY))
    calls: list = []
    other: list = []

    def slow_part() -> None:
        committed_clock.advance(3 * SECOND)
        threading.Event().wait(1.0)  # the watchdogs' renewals (0.2 s) run meanwhile

        def other_worker() -> None:
            try:
                other.append(run_pass(lease_owner="other-worker"))
            finally:
                connections.close_all()

        thread = threading.Thread(target=other_worker, daemon=True)
        thread.start()
        thread.join(HANG_BOUND_SECONDS)
        connections.close_all()

    @d.executor
    async def run(ctx, payload):
        calls.append(ctx.work_id)
        if len(calls) == 2:
            await asyncio.to_thread(slow_part)
        return {"n": len(calls)}

    ids = [d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={}).work_id
           for k in ("a", "b")]
    try:
        counts = run_pass(batch=2, heartbeat=True)
    finally:
        SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)
    assert other and other[0].claimed == 0, other
    assert counts.succeeded == 2 and counts.lost == 0
    for work_id in ids:
        assert permits(work_id) == [(1, 1, "succeeded", "executor")]
