"""Issue 3 item 5 / docs/protocol/work.md "Identity and outcome truth": an admitted permit without a
recorded outcome (the worker died) follows the provider safety; reconciliation and operator proof.

The worker "dies" in-process by raising :class:`Crash` (a BaseException) from the executor: the
runtime records no outcome, exactly as after a kill at ``work-effect-before-outcome`` (effect
done) or ``work-permit-after-commit`` (raised before the effect). tests/work/test_crash.py kills
real processes at those barriers."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from demo.models import Effect
from django.db import connection

from durable_schedule import work
from durable_schedule.errors import InvalidArgument, ProofRefused, WorkStateConflict
from tests.conftest import T0
from tests.work.conftest import (
    MIN,
    Crash,
    dispatch,
    history,
    one,
    permits,
    run_pass,
    work_row,
)

pytestmark = pytest.mark.django_db

A = T0
RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN, 20 * MIN), 30 * MIN)


class Provider:
    """A test provider: its effect is a demo_effect row; behaviour switches per test."""

    def __init__(self) -> None:
        self.crash: str | None = None  # "before" / "after" the effect, once
        self.unknown = False
        self.reconciler_raises = False
        self.executed: list[int] = []
        self.reconciled: list[int] = []

    def execute(self, ctx, payload):
        self.executed.append(ctx.attempt)
        crash, self.crash = self.crash, None
        if crash == "before":
            raise Crash
        Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="effect")
        if crash == "after":
            raise Crash
        return {"attempt": ctx.attempt}

    def reconcile(self, ctx, payload):
        self.reconciled.append(ctx.permit_no)
        if self.reconciler_raises:
            raise ConnectionError("provider API down")
        if self.unknown:
            return work.Unknown("the provider cannot tell")
        effect = Effect.objects.filter(work_id=ctx.work_id).order_by("id").first()
        return work.NotApplied() if effect is None else work.Applied({"found": effect.attempt})


@pytest.fixture
def provider(define):
    """(Provider, definition) for reconcile_before_retry Work on a three-slot plan."""
    p = Provider()
    d = define("t.invoice", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN))
    d.executor(p.execute)
    d.reconciler(p.reconcile)
    return p, d


def accept(definition, **kwargs):
    return definition.enqueue(scope="tenant-a", command="order-1", idempotency_key="invoice-1",
                              payload={"order": 1}, **kwargs).work_id


def crash_first_attempt(p: Provider, where: str) -> None:
    p.crash = where
    with pytest.raises(Crash):
        run_pass()


def effects(work_id) -> int:
    return Effect.objects.filter(work_id=work_id).count()


# ------------------------------------------------------------------ idempotent
def test_idempotent__a_lost_attempt_is_retried_and_its_permit_stays_ambiguous(clock, define):
    p = Provider()
    d = define("t.touch", safety=work.ProviderSafety.IDEMPOTENT)
    d.executor(p.execute)
    work_id = accept(d)
    crash_first_attempt(p, "after")
    assert work_row(work_id, "state", "attempt") == ("running", 1)
    clock.advance(MIN)  # the lease (1 min) expires
    counts = run_pass()
    assert (counts.recovered, counts.retried) == (1, 1)
    assert work_row(work_id, "state", "due_at") == ("pending", A + MIN + 10 * timedelta(
        seconds=1))
    clock.advance(10 * timedelta(seconds=1))
    assert run_pass().succeeded == 1
    assert p.executed == [1, 2] and effects(work_id) == 2  # repeating is the idempotent promise
    assert permits(work_id) == [(1, 1, None, None), (2, 2, "succeeded", "executor")]


def test_recovery__a_live_lease_is_not_taken_over(clock, define):
    p = Provider()
    d = define("t.touch2", safety=work.ProviderSafety.IDEMPOTENT)
    d.executor(p.execute)
    work_id = accept(d)
    crash_first_attempt(p, "after")
    clock.advance(MIN - timedelta(microseconds=1))
    assert run_pass().claimed == 0
    assert work_row(work_id, "state", "lease_owner") == ("running", "test-worker")


# ------------------------------------------------------------------ reconcile_before_retry
def test_reconcile__applied_establishes_success_without_repeating_the_effect(clock, provider):
    p, d = provider
    work_id = accept(d)
    crash_first_attempt(p, "after")
    clock.set(A + 5 * MIN)
    counts = run_pass()
    assert (counts.recovered, counts.reconciled, counts.succeeded, counts.admitted) == (
        1, 1, 1, 0)
    assert p.executed == [1] and p.reconciled == [1] and effects(work_id) == 1
    state, result, attempt = work_row(work_id, "state", "result", "attempt")
    assert (state, json.loads(result), attempt) == ("succeeded", {"found": 1}, 1)
    assert permits(work_id) == [(1, 1, "applied", "reconciler")]
    assert history(work_id)[-2:] == ["reconciling", "reconciled_applied"]


def test_reconcile__not_applied_lets_the_next_attempt_proceed(clock, provider):
    p, d = provider
    work_id = accept(d)
    crash_first_attempt(p, "before")
    clock.set(A + 5 * MIN)
    counts = run_pass()
    assert (counts.reconciled, counts.admitted, counts.succeeded) == (1, 1, 1)
    assert p.executed == [1, 2] and effects(work_id) == 1
    assert permits(work_id) == [(1, 1, "not_applied", "reconciler"),
                                (2, 2, "succeeded", "executor")]


def test_reconcile__not_applied_waits_for_the_next_slot(clock, provider):
    p, d = provider
    work_id = accept(d)
    crash_first_attempt(p, "before")
    clock.set(A + 2 * MIN)  # lease expired, but slot 1 (5 min) is not due yet
    counts = run_pass()
    assert (counts.reconciled, counts.retried, counts.admitted) == (1, 1, 0)
    assert work_row(work_id, "state", "due_at") == ("pending", A + 5 * MIN)
    assert dispatch(work_id) == (A + 5 * MIN, None)


@pytest.mark.parametrize("how", ["unknown", "raises"])
def test_reconcile__unknown_suspends_the_work_for_an_operator(clock, provider, how):
    p, d = provider
    work_id = accept(d)
    crash_first_attempt(p, "after")
    p.unknown = how == "unknown"
    p.reconciler_raises = how == "raises"
    clock.set(A + 5 * MIN)
    counts = run_pass()
    assert (counts.reconciled, counts.suspended, counts.admitted) == (1, 1, 0)
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
    assert dispatch(work_id) is None and permits(work_id) == [(1, 1, None, None)]
    assert p.executed == [1]


def test_reconcile__a_missing_reconciler_suspends_until_resumed(clock, define):
    p = Provider()
    d = define("t.noreconciler", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    d.executor(p.execute)
    work_id = accept(d)
    crash_first_attempt(p, "after")
    clock.advance(MIN)
    assert run_pass().suspended == 1
    assert work_row(work_id, "suspension_reason") == ("reconciler_missing",)
    d.reconciler(p.reconcile)
    work.resume("tenant-a", work_id, actor="ops")
    counts = run_pass()
    assert (counts.reconciled, counts.succeeded) == (1, 1) and effects(work_id) == 1


# ------------------------------------------------------------------ operator proof
@pytest.fixture
def suspended(clock, provider):
    """A Work suspended by an Unknown verdict after its first attempt's effect happened."""
    p, d = provider
    work_id = accept(d)
    crash_first_attempt(p, "after")
    p.unknown = True
    clock.set(A + 5 * MIN)
    run_pass()
    p.unknown = False
    return p, work_id


def test_proof__applied_records_the_result_and_the_actor(clock, suspended):
    p, work_id = suspended
    recorded = work.record_proof("tenant-a", work_id, "applied", actor="alice@ops",
                                 result={"invoice": "INV-1"}, expected_permit_no=1)
    assert (recorded.permit_no, recorded.permit_attempt, recorded.state) == (1, 1, "succeeded")
    state, result = work_row(work_id, "state", "result")
    assert (state, json.loads(result)) == ("succeeded", {"invoice": "INV-1"})
    assert one("select outcome, resolution_source, resolved_by from durable_work_permit") == (
        "applied", "operator", "alice@ops")
    event, actor, detail = one("select event, actor, detail from durable_work_history"
                               " order by id desc limit 1")
    assert (event, actor) == ("proof_applied", "alice@ops")
    assert json.loads(detail)["permit_no"] == 1 and json.loads(detail)["permit_attempt"] == 1
    assert p.executed == [1] and run_pass().claimed == 0


@pytest.mark.parametrize("expected", [True, 1.0, "1", 0, -1],
                         ids=["bool-True", "float", "str", "zero", "negative"])
def test_proof__a_permit_number_that_is_not_an_int_is_refused(clock, suspended, expected):
    """True == 1 and 1.0 == 1: either was taken as permit 1 and resolved it."""
    p, work_id = suspended
    with pytest.raises(InvalidArgument, match="expected_permit_no") as refused:
        work.record_proof("tenant-a", work_id, "applied", actor="alice@ops",
                          result={"invoice": "INV-1"}, expected_permit_no=expected)
    assert refused.value.code == "DS406"
    assert work_row(work_id, "state") == ("suspended",)
    assert [permit[2] for permit in permits(work_id)] == [None]


def test_proof__not_applied_hands_the_work_back_to_its_plan(clock, suspended):
    p, work_id = suspended
    recorded = work.record_proof("tenant-a", work_id, "not_applied", actor="bob")
    assert recorded.state == "pending" and recorded.unresolved_permits == 0
    assert work_row(work_id, "due_at", "suspension_reason") == (A + 5 * MIN, None)
    assert run_pass().succeeded == 1 and p.executed == [1, 2]


def test_proof__resolves_only_the_selected_permit(clock, suspended):
    _, work_id = suspended
    with connection.cursor() as cur:  # factory: a later admitted attempt also left no outcome
        cur.execute("insert into durable_work_permit (scope_id, work_id, permit_no, attempt,"
                    " lease_generation, admitted_at) values ('tenant-a', %s, 2, 2, 3, %s)",
                    [work_id, A + 5 * MIN])
        cur.execute("update durable_work set attempt = 2 where work_id = %s", [work_id])
    with pytest.raises(ProofRefused):
        work.record_proof("tenant-a", work_id, "not_applied", actor="bob",
                          expected_permit_no=1)
    assert [p[2] for p in permits(work_id)] == [None, None]
    first = work.record_proof("tenant-a", work_id, "not_applied", actor="bob",
                              expected_permit_no=2)
    assert (first.permit_no, first.state, first.unresolved_permits) == (2, "suspended", 1)
    assert [p[2] for p in permits(work_id)] == [None, "not_applied"]
    second = work.record_proof("tenant-a", work_id, "not_applied", actor="carol")
    assert (second.permit_no, second.state) == (1, "pending")


def test_resume__does_not_lift_a_suspension_that_needs_proof(clock, suspended):
    _, work_id = suspended
    with pytest.raises(WorkStateConflict):
        work.resume("tenant-a", work_id, actor="bob")
    assert work_row(work_id, "state") == ("suspended",) and dispatch(work_id) is None


def test_proof__does_not_reopen_a_closed_window(clock, suspended):
    _, work_id = suspended
    clock.set(A + 30 * MIN)  # the circuit closed while the Work waited for proof
    recorded = work.record_proof("tenant-a", work_id, "not_applied", actor="bob")
    assert recorded.state == "expired"
    assert work_row(work_id, "execution_admission_closed_reason") == ("circuit_open",)
    assert dispatch(work_id) is None


def test_proof__applied_is_accepted_after_the_cutoff(clock, suspended):
    _, work_id = suspended
    clock.set(A + 2 * 60 * MIN)
    assert work.record_proof("tenant-a", work_id, "applied", actor="bob").state == "succeeded"


@pytest.mark.parametrize("kwargs, error", [
    ({"outcome": "maybe"}, InvalidArgument),
    ({"outcome": "not_applied", "result": {"x": 1}}, InvalidArgument),
    ({"outcome": "applied", "actor": ""}, Exception),
])
def test_proof__bad_arguments_change_nothing(clock, suspended, kwargs, error):
    _, work_id = suspended
    args = {"outcome": "applied", "actor": "bob", **kwargs}
    with pytest.raises(error):
        work.record_proof("tenant-a", work_id, args.pop("outcome"), **args)
    assert work_row(work_id, "state") == ("suspended",)


def test_proof__is_refused_for_work_that_is_not_suspended(clock, provider):
    p, d = provider
    work_id = accept(d)
    with pytest.raises(ProofRefused):  # pending: nothing was admitted yet
        work.record_proof("tenant-a", work_id, "applied", actor="bob")
    crash_first_attempt(p, "after")  # running, its permit unresolved: the reconciler's job
    with pytest.raises(ProofRefused):
        work.record_proof("tenant-a", work_id, "applied", actor="bob")
    assert work_row(work_id, "state") == ("running",)
    assert permits(work_id) == [(1, 1, None, None)]
