"""docs/work.md "Concurrency": a stopping worker (SIGTERM under ``--loop``, a pass's ``stop``)
starts no new attempt. A ``NotApplied`` verdict that arrives while the worker is stopping may
admit the next attempt in its own transaction (its slot is due); that attempt is handed back
(permit ``proven_no_effect``, no slot consumed, due again at once), not invoked. Before, the
stopping worker invoked it, so its drain took one more whole attempt."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.work.concurrency import shutdown_pool
from tests.conftest import T0
from tests.work.conftest import MIN, Crash, dispatch, permits, run_pass, work_row

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN, 20 * MIN), 30 * MIN)


def test_stop__an_attempt_a_not_applied_verdict_admits_while_stopping_is_handed_back(
        clock, define):
    scene(clock, define, concurrency=1)


@pytest.mark.django_db(transaction=True)
def test_stop__the_same_in_a_concurrent_pass(committed_clock, define):
    try:
        scene(committed_clock, define, concurrency=2)
    finally:
        shutdown_pool()  # its threads' connections would outlive the test database


def scene(clock, define, *, concurrency: int) -> None:
    stopping, calls = [], []
    d = define("t.stop_reconciled", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN))

    @d.executor
    def execute(ctx, payload):
        calls.append(ctx.attempt)
        if ctx.attempt == 1:
            raise Crash
        return {"attempt": ctx.attempt}

    @d.reconciler
    def reconcile(ctx, payload):
        stopping.append(True)  # the stop request arrives while the reconciler runs
        return work.NotApplied()

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                        payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    clock.advance(5 * MIN)  # the lease has ended and slot 1 (A + 5 min) is due
    counts = run_pass(stop=lambda: bool(stopping), concurrency=concurrency)
    assert calls == [1]  # attempt 2 was admitted by the verdict but not started
    assert (counts.reconciled, counts.admitted, counts.released) == (1, 1, 1)
    assert work_row(work_id, "state", "attempt", "due_at") == ("pending", 1, T0 + 5 * MIN)
    assert permits(work_id) == [(1, 1, "not_applied", "reconciler"),
                                (2, 2, "proven_no_effect", "runtime")]
    assert dispatch(work_id) == (T0 + 5 * MIN, None)  # due again at once
    # The next worker runs attempt 2 in slot 1, with nothing left to reconcile.
    counts = run_pass()
    assert calls == [1, 2] and (counts.succeeded, counts.reconciled) == (1, 0)
