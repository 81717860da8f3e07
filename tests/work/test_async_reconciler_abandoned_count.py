"""docs/work.md "Concurrency": a cancelled async executor *or reconciler* that catches the
cancellation and does not return is waited for a bounded grace only; then the runtime records
nothing, logs a WARNING naming the Work, and the pass counts it as ``abandoned``. An abandoned
reconciler was counted as ``refused`` (the count of a reconciliation whose lease ran out before
the reconciler was invoked), so a worker's counts and metrics never showed it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from durable_schedule import work
from durable_schedule.work import aio, clock
from tests.conftest import T0
from tests.work.conftest import MIN, Crash, permits, run_pass, work_row
from tests.work.test_async_abandoned import _fresh_pool, in_thread

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["_fresh_pool"]  # the autouse fixture, imported for this module's tests


def test_abandoned_async_reconciler__is_counted_abandoned(committed_clock, define, monkeypatch):
    monkeypatch.setattr(aio, "CANCEL_GRACE_SECONDS", 0.2, raising=False)
    release, jump = threading.Event(), [0.0]
    d = define("t.stubborn_reconciler", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)

    @d.executor
    def run(ctx, payload):
        raise Crash  # the worker "dies" after the permit: the attempt must be reconciled

    @d.reconciler
    async def reconcile(ctx, payload):
        jump[0] = 10_000.0  # past the reconciliation lease's local end
        while not release.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                pass  # caught and ignored
        return work.NotApplied()

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    committed_clock.set(T0 + 2 * MIN)  # the attempt's lease ended
    try:
        with clock.controlled(lambda: time.monotonic() + jump[0]):
            counts = in_thread(lambda: run_pass())
    finally:
        release.set()
    assert (counts.recovered, counts.abandoned, counts.refused) == (1, 1, 0), counts
    # Nothing recorded: still reconciling under this worker's lease, the permit unjudged.
    assert work_row(work_id, "state", "lease_owner") == ("running", "test-worker")
    assert permits(work_id) == [(1, 1, None, None)]
