"""docs/work.md "Operator commands": ``work.cancel`` refuses running Work only while its lease
holds. Once the lease has ended by the database clock (the holder crashed or stalled and no
worker recovered it yet) the operator can cancel it; the permit stays unresolved and the old
holder's outcome, should it still arrive, is fenced. Before, such Work could not be canceled
until a worker came back and recovered it -- which could run it again first."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.errors import WorkStateConflict
from tests.conftest import T0
from tests.work.conftest import (
    MIN,
    Crash,
    count,
    dispatch,
    history,
    one,
    permits,
    run_pass,
    work_row,
)

pytestmark = pytest.mark.django_db


def crashed_work(define, safety=work.ProviderSafety.IDEMPOTENT):
    calls = []
    d = define("t.cancel_lapsed", safety=safety)

    @d.executor
    def execute(ctx, payload):
        calls.append(ctx.attempt)
        raise Crash

    if safety == work.ProviderSafety.RECONCILE_BEFORE_RETRY:
        d.reconciler(lambda ctx, payload: work.NotApplied())
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    assert work_row(work_id, "state", "lease_expires_at") == ("running", T0 + MIN)
    return work_id, calls


@pytest.mark.parametrize("safety", list(work.ProviderSafety))
def test_cancel__running_work_whose_lease_ended_is_canceled(clock, define, safety):
    work_id, calls = crashed_work(define, safety)
    clock.advance(MIN)  # the lease ends (exclusive): no worker recovered the Work yet
    assert work.cancel("tenant-a", work_id, actor="ops") == "canceled"
    assert work_row(work_id, "state", "lease_owner", "lease_expires_at", "finished_at") == (
        "canceled", None, None, T0 + MIN)
    assert dispatch(work_id) is None
    assert permits(work_id) == [(1, 1, None, None)]  # its effect stays unknown
    assert history(work_id)[-1] == "canceled"
    detail = one("select detail from durable_work_history where work_id = %s"
                 " and event = 'canceled'", (work_id,))[0]
    detail = json.loads(detail)
    assert detail["lease_owner"] == "test-worker" and detail["unresolved_permit_no"] == 1
    assert run_pass().claimed == 0 and calls == [1]  # nothing runs it again


def test_cancel__running_work_under_a_live_lease_is_still_refused(clock, define):
    work_id, _ = crashed_work(define)
    clock.advance(MIN - timedelta(microseconds=1))
    with pytest.raises(WorkStateConflict) as refused:
        work.cancel("tenant-a", work_id, actor="ops")
    assert refused.value.code == "DS217"
    assert work_row(work_id, "state", "lease_owner") == ("running", "test-worker")
    assert history(work_id)[-1] == "admitted"


def test_cancel__the_stalled_holder_outcome_is_fenced(clock, define):
    d = define("t.cancel_stalled")

    @d.executor
    def execute(ctx, payload):
        clock.advance(2 * MIN)  # the holder stalls past its lease; the operator cancels
        assert work.cancel("tenant-a", ctx.work_id, actor="ops") == "canceled"
        return {"late": True}

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    counts = run_pass()
    assert (counts.succeeded, counts.lost, counts.quarantined) == (0, 1, 1)
    assert work_row(work_id, "state", "result") == ("canceled", None)
    assert one("select reason, result from durable_work_quarantine where work_id = %s",
               (work_id,)) == ("lease_lost", "{\"late\": true}")
    assert count("durable_work_dispatch") == 0


def test_cancel__suspended_work_keeps_no_suspension_reason_once_canceled(clock, define):
    """A suspension reason says why Work waits for an operator; canceled Work waits for nothing.
    Proof and resume clear it when they end a suspension; cancel left it, so ``work.get``, the
    admin and the tasks backend showed a terminal Work still "suspended for" a reason. The
    reason moves into the ``canceled`` history row instead."""
    d = define("t.cancel_suspended")  # no executor: the claim suspends it unknown_definition
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    assert run_pass().suspended == 1
    assert work_row(work_id, "state", "suspension_reason") == ("suspended", "unknown_definition")
    assert work.cancel("tenant-a", work_id, actor="ops") == "canceled"
    assert work_row(work_id, "state", "suspension_reason") == ("canceled", None)
    info = work.get("tenant-a", work_id)
    assert (info.state, info.suspension_reason) == ("canceled", None)
    detail = json.loads(one("select detail from durable_work_history where work_id = %s"
                            " and event = 'canceled'", (work_id,))[0])
    assert detail["suspension_reason"] == "unknown_definition"
