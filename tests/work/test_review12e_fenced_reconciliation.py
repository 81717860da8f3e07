"""A reconciler whose lease was lost while it ran (capped renewals, another worker took the Work
over) answers late: its verdict changes nothing -- no permit resolution, no new attempt, no
success -- but the reconciliation ran and may have touched the external system, so the audit
trail keeps it (docs/work.md "Reconciliation"): a ``reconciliation_fenced`` history row written
by the fenced lease's owner in the transaction that found the lease lost, and, for an Applied
verdict, its result quarantined as evidence (reason ``reconciliation_lost``). Before, the fenced
verdict left no row at all."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import work
from tests.work.conftest import MIN, OWNER, Crash, history, permits, rows, run_pass, work_row

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1),
                         lease_duration=MIN, renewal_cadence=timedelta(seconds=15),
                         maximum_lease_lifetime=3 * MIN)


@pytest.fixture
def crashed(define, clock):
    state = {"late": None}
    d = define("t.review12e_fenced", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(RETRY))

    @d.executor
    def execute(ctx, payload):
        raise Crash

    @d.reconciler
    def reconcile(ctx, payload):
        if ctx.lease_owner != OWNER:  # the second worker answers at once
            return work.Unknown("second look")
        for _ in range(4):  # hung past the capped lease (start + 3 min by the database clock)
            clock.advance(MIN)
            ctx.renew()
        assert run_pass(lease_owner="other-worker").recovered == 1
        if isinstance(state["late"], Exception):
            raise state["late"]
        return state["late"]

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    clock.advance(MIN)
    return work_id, state


def fenced_rows(work_id) -> list[tuple]:
    return rows("select actor, attempt, detail from durable_work_history"
                " where work_id = %s and event = 'reconciliation_fenced' order by id", (work_id,))


def quarantine(work_id) -> list[tuple]:
    return rows("select reason, attempt, lease_owner, result from durable_work_quarantine"
                " where work_id = %s order by id", (work_id,))


def _detail(value):
    return value if isinstance(value, dict) else json.loads(value)


@pytest.mark.parametrize(("late", "name"), [
    (work.NotApplied(), "not_applied"),
    (work.Unknown("provider timeout"), "unknown"),
    (RuntimeError("provider unreachable"), "none"),
])
def test_fenced_verdict__is_recorded_in_the_history_and_changes_nothing(crashed, late, name):
    work_id, state = crashed
    state["late"] = late
    counts = run_pass()
    assert counts.lost == 1 and counts.admitted == 0 and counts.reconciled == 0
    assert permits(work_id) == [(1, 1, None, None)]
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
    assert history(work_id) == ["accepted", "admitted", "reconciling", "reconciling",
                                "suspended", "reconciliation_fenced"]
    [(actor, attempt, detail)] = fenced_rows(work_id)
    detail = _detail(detail)
    assert (actor, attempt) == (OWNER, 1)
    assert detail["reason"] == "lease_lost" and detail["verdict"] == name
    assert detail["permit_no"] == 1 and detail["permit_attempt"] == 1
    assert detail["result_quarantined"] is False
    assert detail.get("verdict_reason") == ("provider timeout" if name == "unknown" else None)
    assert ("reconciler_error" in detail) == (name == "none")
    if name == "none":
        assert detail["reconciler_error"]["class"].endswith("RuntimeError")
    assert quarantine(work_id) == []
    # The attempt itself stays unresolved and unfailed in work.attempts(): the fenced row is not
    # read as its failure.
    [attempt_info] = work.attempts("tenant-a", work_id)
    assert (attempt_info.outcome, attempt_info.failure_event, attempt_info.error) == (
        None, None, None)


def test_fenced_applied_verdict__keeps_its_result_as_evidence_not_as_success(crashed):
    work_id, state = crashed
    state["late"] = work.Applied({"ledger": "tx-42"})
    counts = run_pass()
    assert counts.lost == 1 and counts.succeeded == 0 and counts.quarantined == 1
    assert work_row(work_id, "state", "result") == ("suspended", None)
    assert permits(work_id) == [(1, 1, None, None)]
    [(actor, _, detail)] = fenced_rows(work_id)
    detail = _detail(detail)
    assert actor == OWNER and detail["verdict"] == "applied"
    assert detail["result_quarantined"] is True
    [(reason, attempt, owner, result)] = quarantine(work_id)
    assert (reason, attempt, owner) == ("reconciliation_lost", 1, OWNER)
    assert _detail(result) == {"ledger": "tx-42"}


@pytest.mark.parametrize(("verdict", "state"), [
    (work.Applied({"ok": True}), "succeeded"),
    (work.NotApplied(), "pending"),
    (work.Unknown("no answer"), "suspended"),
])
@pytest.mark.django_db(transaction=True)
def test_reconciliation_commit_ack_lost__the_retry_records_no_fenced_verdict(
        committed_clock, define, monkeypatch, verdict, state):
    """The verdict's commit was applied but its acknowledgement lost: runner.retry runs the
    record again, finds the lease cleared by that very commit, and must not read it as a lost
    lease (no ``reconciliation_fenced`` row, no quarantined result)."""
    from django.db import OperationalError

    from durable_schedule.work import runtime

    d = define("t.review12e_acklost", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(work.RetryPolicy(
                   maximum_attempts=3, lease_duration=MIN,
                   initial_retry_delay=timedelta(minutes=30),
                   renewal_cadence=timedelta(seconds=15))))

    @d.executor
    def execute(ctx, payload):
        raise Crash

    d.reconciler(lambda ctx, payload: verdict)
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    committed_clock.advance(MIN)
    real = runtime.record_reconciliation
    calls = []

    def flaky(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return out

    monkeypatch.setattr(runtime, "record_reconciliation", flaky)
    monkeypatch.setattr("durable_schedule.runner.retry.time.sleep", lambda s: None)
    counts = run_pass()
    assert len(calls) == 2
    assert work_row(work_id, "state")[0] == state
    assert "reconciliation_fenced" not in history(work_id)
    assert quarantine(work_id) == []
    assert counts.lost == 0


def test_fenced_verdict__after_an_operator_cancel_of_the_stalled_reconciliation(define, clock):
    """The reconciliation lease ended (capped) and an operator canceled the Work: the late
    Applied verdict stays evidence; the Work stays canceled with no result."""
    d = define("t.review12e_fenced_cancel", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy(RETRY))

    @d.executor
    def execute(ctx, payload):
        raise Crash

    @d.reconciler
    def reconcile(ctx, payload):
        for _ in range(4):
            clock.advance(MIN)
            ctx.renew()
        work.cancel("tenant-a", ctx.work_id, actor="ops")
        return work.Applied({"late": True})

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    clock.advance(MIN)
    counts = run_pass()
    assert counts.lost == 1 and counts.succeeded == 0
    assert work_row(work_id, "state", "result") == ("canceled", None)
    assert history(work_id)[-2:] == ["canceled", "reconciliation_fenced"]
    assert [r[0] for r in quarantine(work_id)] == ["reconciliation_lost"]
