"""docs/protocol/work.md: reconciliation may run after the absolute deadline D and establishes
effect truth, but never reopens the closed admission window. A reconcile_before_retry attempt
crashes (its permit unresolved) and the reconciliation runs at or after D, through the clock
seam: Applied succeeds with its result; NotApplied closes the Work ``expired`` (deadline) with
no new permit and no invocation; the history shows exactly that."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import work
from tests.conftest import T0
from tests.work.conftest import MIN, Crash, history, permits, run_pass, work_row

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=5, lease_duration=MIN,
                         renewal_cadence=timedelta(seconds=15), maximum_lease_lifetime=3 * MIN,
                         initial_retry_delay=timedelta(seconds=1))
D = T0 + 3 * MIN


@pytest.fixture
def crashed_before_d(define):
    state = {"verdict": None, "calls": 0}
    d = define("t.review12e_deadline", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(RETRY))

    @d.executor
    def execute(ctx, payload):
        state["calls"] += 1
        raise Crash

    d.reconciler(lambda ctx, payload: state["verdict"])
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={},
                        deadline=D).work_id
    with pytest.raises(Crash):
        run_pass()
    return work_id, state


@pytest.mark.parametrize("at", [D, D + 5 * MIN])
def test_not_applied_at_or_after_d__expires_without_a_new_attempt(clock, crashed_before_d, at):
    work_id, state = crashed_before_d
    state["verdict"] = work.NotApplied()
    clock.set(at)
    counts = run_pass()
    assert state["calls"] == 1 and counts.admitted == 0
    assert permits(work_id) == [(1, 1, "not_applied", "reconciler")]
    assert work_row(work_id, "state", "execution_admission_closed_reason") == (
        "expired", "deadline")
    assert history(work_id) == ["accepted", "admitted", "reconciling", "expired"]
    [info] = work.attempts("tenant-a", work_id)
    assert (info.outcome, info.failure_event) == ("not_applied", "expired")


@pytest.mark.parametrize("at", [D, D + 5 * MIN])
def test_applied_at_or_after_d__establishes_success_with_its_result(clock, crashed_before_d, at):
    work_id, state = crashed_before_d
    state["verdict"] = work.Applied({"ledger": "tx-1"})
    clock.set(at)
    counts = run_pass()
    assert counts.succeeded == 1 and counts.admitted == 0 and state["calls"] == 1
    assert permits(work_id) == [(1, 1, "applied", "reconciler")]
    state_, result = work_row(work_id, "state", "result")
    assert state_ == "succeeded" and json.loads(result) == {"ledger": "tx-1"}
    assert history(work_id) == ["accepted", "admitted", "reconciling", "reconciled_applied"]
