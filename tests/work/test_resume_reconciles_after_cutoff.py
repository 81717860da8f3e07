"""docs/work.md "Provider safety" and "Deadline": a ``reconcile_before_retry`` Work's unresolved
admitted permit is handed to the reconciler before anything else, and reconciliation may run
after the admission cutoff (it establishes what happened, it reopens nothing).

A Work suspended ``reconciler_missing`` (or ``unknown_definition``) on its way to
reconciliation keeps that unresolved permit. Resumed after the cutoff, it must still be
reconciled -- as the same Work recovered from ``running`` after the cutoff is -- instead of
being closed ``expired`` with its effect never judged (a permit nothing can resolve any more:
proof is for suspended Work only)."""

from __future__ import annotations

import json

import pytest

from durable_schedule import work
from tests.conftest import T0
from tests.work.conftest import MIN, dispatch, history, permits, run_pass, work_row
from tests.work.test_recovery import Provider, accept, crash_first_attempt, effects

pytestmark = pytest.mark.django_db

A = T0


@pytest.fixture
def resumed_after_deadline(clock, define):
    """A reconcile_before_retry Work whose first attempt's effect happened (the worker died
    before the outcome), suspended for a missing reconciler, then resumed after its deadline."""
    p = Provider()
    d = define("t.resume_late", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(work.RetryPolicy()))
    d.executor(p.execute)
    work_id = accept(d, deadline=A + 10 * MIN)
    crash_first_attempt(p, "after")
    clock.set(A + 2 * MIN)  # the lease (1 min) ended: the recovery needs the reconciler
    assert run_pass().suspended == 1
    assert work_row(work_id, "suspension_reason") == ("reconciler_missing",)
    clock.set(A + 30 * MIN)  # the deadline passed while the Work waited for an operator
    return p, d, work_id


def test_resume_after_deadline__applied_verdict_establishes_success(clock,
                                                                    resumed_after_deadline):
    p, d, work_id = resumed_after_deadline
    d.reconciler(p.reconcile)
    work.resume("tenant-a", work_id, actor="ops")
    counts = run_pass()
    assert (counts.reconciled, counts.succeeded, counts.admitted) == (1, 1, 0)
    assert p.reconciled == [1] and p.executed == [1] and effects(work_id) == 1
    state, result = work_row(work_id, "state", "result")
    assert (state, json.loads(result)) == ("succeeded", {"found": 1})
    assert permits(work_id) == [(1, 1, "applied", "reconciler")]
    assert dispatch(work_id) is None


def test_resume_after_deadline__not_applied_closes_the_window(clock, define):
    p = Provider()
    d = define("t.resume_late2", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(work.RetryPolicy()))
    d.executor(p.execute)
    work_id = accept(d, deadline=A + 10 * MIN)
    crash_first_attempt(p, "before")  # no effect
    clock.set(A + 2 * MIN)
    assert run_pass().suspended == 1
    clock.set(A + 30 * MIN)
    d.reconciler(p.reconcile)
    work.resume("tenant-a", work_id, actor="ops")
    counts = run_pass()
    assert (counts.reconciled, counts.expired, counts.admitted) == (1, 1, 0)
    assert p.reconciled == [1] and p.executed == [1]
    assert work_row(work_id, "state", "execution_admission_closed_reason") == (
        "expired", "deadline")
    assert permits(work_id) == [(1, 1, "not_applied", "reconciler")]
    assert history(work_id)[-2:] == ["reconciling", "expired"]
    assert dispatch(work_id) is None


def test_resume_before_deadline__is_reconciled_as_before(clock, resumed_after_deadline):
    # The neighbour that already held: within the window the resumed Work is reconciled.
    p, d, work_id = resumed_after_deadline
    clock.set(A + 5 * MIN)
    d.reconciler(p.reconcile)
    work.resume("tenant-a", work_id, actor="ops")
    counts = run_pass()
    assert (counts.reconciled, counts.succeeded) == (1, 1)
    assert work_row(work_id, "state") == ("succeeded",)


def test_resume_of_the_last_attempt__is_reconciled_not_failed(clock, define):
    # maximum_attempts=1: the only attempt's effect happened, its worker died. Resumed within
    # the window, the Work was failed ``attempts_exhausted`` (DS223) with the permit unjudged.
    p = Provider()
    d = define("t.resume_last", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(work.RetryPolicy(maximum_attempts=1)))
    d.executor(p.execute)
    work_id = accept(d)
    crash_first_attempt(p, "after")
    clock.set(A + 2 * MIN)
    assert run_pass().suspended == 1
    d.reconciler(p.reconcile)
    work.resume("tenant-a", work_id, actor="ops")
    counts = run_pass()
    assert (counts.reconciled, counts.succeeded, counts.failed) == (1, 1, 0)
    assert work_row(work_id, "state") == ("succeeded",)
    assert permits(work_id) == [(1, 1, "applied", "reconciler")]
