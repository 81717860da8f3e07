"""docs/protocol/work.md's five-slot plan (0, 5, 20, 60, 180 minutes, 240-minute circuit) with the
real runtime pump: no early execution, slot i at A + O[i], overdue slots consumed in a burst by fast
failures, no slot at or after the circuit, a refusal consumes no slot."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from tests.conftest import T0
from tests.work.conftest import MIN, dispatch, permits, run_pass, work_row

pytestmark = pytest.mark.django_db

A = T0
RETRY = work.RetryPolicy(maximum_attempts=5, maximum_elapsed=timedelta(hours=4),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", tuple(m * MIN for m in (0, 5, 20, 60, 180)),
                        240 * MIN)


@pytest.fixture
def planned(define):
    """A planned definition whose executor records (attempt, slot due, admitted at) and fails."""
    calls: list[tuple[int, object, object]] = []
    d = define("t.planned", policy=work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN))

    @d.executor
    def execute(ctx, payload):
        calls.append((ctx.attempt, ctx.due_at, ctx.admitted_at))
        raise RuntimeError("provider unavailable")

    accepted = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={})
    return accepted.work_id, calls


def test_plan__slots_run_at_acceptance_plus_offset_and_never_early(clock, planned):
    work_id, calls = planned
    for offset in (0, 5, 20, 60, 180):
        clock.set(A + offset * MIN - timedelta(microseconds=1))
        if offset:
            assert run_pass().claimed == 0, f"slot at {offset} min ran early"
        clock.set(A + offset * MIN)
        run_pass()
        assert calls[-1] == (len(calls), A + offset * MIN, A + offset * MIN)
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5]
    assert work_row(work_id, "state", "execution_admission_closed_reason") == (
        "failed", "plan_exhausted")
    assert dispatch(work_id) is None


def test_plan__overdue_slots_are_consumed_in_a_burst_by_fast_failures(clock, planned):
    work_id, calls = planned
    run_pass()  # slot 0 at A
    clock.set(A + 100 * MIN)  # downtime: slots 1 (5 min) and 2 (20 min), 3 (60 min) overdue
    counts = run_pass()
    assert counts.admitted == 3 and counts.retried == 3
    assert [c[1] for c in calls] == [A, A + 5 * MIN, A + 20 * MIN, A + 60 * MIN]
    # The next slot (180 min) is in the future: the burst stops there.
    assert work_row(work_id, "state", "due_at", "attempt") == ("pending", A + 180 * MIN, 4)


def test_plan__no_slot_at_or_after_the_circuit_and_the_refusal_consumes_none(clock, planned):
    work_id, calls = planned
    run_pass()
    clock.set(A + 60 * MIN)
    run_pass()  # slots 1, 2, 3 in a burst; slot 4 due at 180 min
    assert work_row(work_id, "due_at", "attempt") == (A + 180 * MIN, 4)
    clock.set(A + 240 * MIN)  # the exclusive circuit: slot 4 was never claimed in time
    counts = run_pass()
    assert (counts.refused, counts.expired, counts.admitted) == (1, 1, 0)
    assert len(calls) == 4
    assert work_row(work_id, "state", "attempt", "execution_admission_closed_reason",
                    "execution_admission_closed_at") == (
        "expired", 4, "circuit_open", A + 240 * MIN)
    assert len(permits(work_id)) == 4  # the refusal issued no permit


def test_plan__inspection_walks_the_unconsumed_slots(clock, planned):
    work_id, _ = planned
    assert work.get("tenant-a", work_id).execution.next_eligibility_at == A
    run_pass()
    snapshot = work.get("tenant-a", work_id).execution
    assert (snapshot.next_eligibility_at, snapshot.current_slot) == (A + 5 * MIN, 0)
    clock.set(A + 180 * MIN)
    run_pass()
    info = work.get("tenant-a", work_id)
    assert (info.execution.next_eligibility_at, info.execution.current_slot) == (None, 4)
    assert info.due_at == A + 180 * MIN
