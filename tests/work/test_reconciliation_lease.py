"""docs/work.md "Leases and renewal": a reconciliation lease is renewed like an attempt's, up to
the policy's maximum lease lifetime counted from the reconciliation's start (never by the
deadline: reconciliation may run after it). A reconciler that never returns therefore stops
being renewed, sees ``ctx.cancelled`` at its capped lease end, and its lease can be taken over;
before, every renewal extended it by another lease, without end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import work
from tests.conftest import T0
from tests.work.conftest import MIN, Crash, history, permits, run_pass, work_row

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1),
                         lease_duration=MIN, renewal_cadence=timedelta(seconds=15),
                         maximum_lease_lifetime=3 * MIN)


@pytest.fixture
def crashed(define, clock):
    """A reconcile_before_retry Work whose first attempt crashed (permit 1 unresolved) and whose
    lease has expired; ``reconciler`` is called with ``(ctx, payload)``."""
    state = {"reconciler": None}
    d = define("t.rec_lease", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(RETRY))

    @d.executor
    def execute(ctx, payload):
        raise Crash

    @d.reconciler
    def reconcile(ctx, payload):
        return state["reconciler"](ctx, payload)

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    clock.advance(MIN)  # the attempt's lease ends: the next pass reconciles permit 1
    return work_id, state


def test_reconciliation_lease__renewals_stop_at_the_maximum_lease_lifetime(clock, crashed):
    work_id, state = crashed
    start = T0 + MIN  # the reconciliation lease is taken here
    seen = []

    def slow_reconciler(ctx, payload):
        assert ctx.reconciling and ctx.admitted_at == start
        for _ in range(4):
            clock.advance(MIN)
            seen.append((ctx.renew(), ctx.cancelled.is_set()))
        return work.Unknown("the provider did not answer")

    state["reconciler"] = slow_reconciler
    counts = run_pass()
    # Capped at start + 3 min: the renewals at +3 and +4 min grant nothing and signal the end.
    assert seen == [(start + 2 * MIN, False), (start + 3 * MIN, False),
                    (start + 3 * MIN, True), (start + 3 * MIN, True)]
    # Nobody took the lease over meanwhile, so the answer still counts: suspended for an operator.
    assert counts.suspended == 1
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")


def test_reconciliation_lease__a_capped_lease_is_taken_over_and_the_late_verdict_fenced(
        clock, crashed):
    work_id, state = crashed
    verdicts = []

    def hung_then_not_applied(ctx, payload):
        if verdicts:  # the second worker's reconciliation: it answers at once
            verdicts.append(("second", ctx.permit_no))
            return work.Unknown("second look")
        for _ in range(4):
            clock.advance(MIN)
            ctx.renew()
        verdicts.append(("first", ctx.permit_no))
        # Meanwhile (the lease ended at start + 3 min by the database clock) another worker
        # takes the Work over and reconciles it itself.
        taken = run_pass(lease_owner="other-worker")
        assert taken.recovered == 1
        return work.NotApplied()  # late: must not admit a new attempt

    state["reconciler"] = hung_then_not_applied
    counts = run_pass()
    assert verdicts == [("first", 1), ("second", 1)]
    assert counts.lost == 1 and counts.admitted == 0
    assert permits(work_id) == [(1, 1, None, None)]  # no verdict of the first lease applied
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
    # The late verdict is kept as evidence only (test_review12e_fenced_reconciliation.py).
    assert history(work_id) == ["accepted", "admitted", "reconciling", "reconciling",
                                "suspended", "reconciliation_fenced"]


def test_reconciliation_lease__one_cap_for_every_permit_judged_under_it(clock, define):
    """Several unresolved permits are judged one after the other under one reconciliation lease
    (a NotApplied verdict hands the next one over): the maximum lease lifetime bounds the whole
    reconciliation, counted from its start. Before, each further judgment was capped from its
    own start, so one reconciliation could hold its lease for several lifetimes."""
    judged = []

    def reconcile(ctx, payload):
        judged.append(ctx.permit_no)
        if ctx.permit_no == 2:  # the most recent first: one minute, then no effect
            clock.advance(MIN)
            judged.append(ctx.renew())
            return work.NotApplied()
        for _ in range(3):
            clock.advance(MIN)
            judged.append((ctx.renew(), ctx.cancelled.is_set()))
        return work.Unknown("the provider did not answer")

    d = define("t.rec_lease_chain", policy=work.ExecutionPolicy(RETRY))

    @d.executor
    def execute(ctx, payload):
        raise Crash

    d.reconciler(reconcile)
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):  # two lost attempts of an idempotent Work: both permits
        run_pass()              # unresolved
    clock.advance(MIN)
    assert run_pass().retried == 1  # recovered; the retry is due 10 s later
    clock.advance(timedelta(seconds=10))
    with pytest.raises(Crash):
        run_pass()
    clock.advance(MIN)
    assert work_row(work_id, "state", "attempt") == ("running", 2)
    assert permits(work_id) == [(1, 1, None, None), (2, 2, None, None)]
    with connection.cursor() as cur:  # by SQL: the Work's effect must now be reconciled first
        cur.execute("update durable_work set provider_safety = 'reconcile_before_retry'"
                    " where work_id = %s", [work_id])
    start = T0 + 2 * MIN + 10 * timedelta(seconds=1)  # the reconciliation lease is taken here
    assert work_row(work_id, "lease_expires_at") == (start,)
    counts = run_pass()
    # Capped at start + 3 min for both judgments: permit 1's renewals at +3 and +4 min grant
    # nothing and signal the end (before: its cap was counted from +1 min, it ran to +4 min).
    assert judged == [2, start + 2 * MIN, 1, (start + 3 * MIN, False),
                      (start + 3 * MIN, True), (start + 3 * MIN, True)]
    assert counts.suspended == 1
    assert permits(work_id) == [(1, 1, None, None), (2, 2, "not_applied", "reconciler")]
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
