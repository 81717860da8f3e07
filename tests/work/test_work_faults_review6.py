"""Adversarial review of the Work runtime under faults (round 6).

A commit whose acknowledgement is lost (the server applied it, the connection died before the
client heard so) is the one database fault whose outcome the runtime cannot see: the bounded
retry runs the phase again against rows the first attempt already moved on. The retry must
find the outcome already recorded, not fence it as a lost lease."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError

from durable_schedule import work
from durable_schedule.work import passes, runtime
from tests.work.conftest import count, history, permits, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)

MIN = timedelta(minutes=1)
POLICY = work.ExecutionPolicy(work.RetryPolicy(lease_duration=MIN,
                                               renewal_cadence=timedelta(seconds=15)))


def _ack_lost_once(monkeypatch, module, name):
    """Replace ``module.name`` by one that runs the real function (which commits) and then
    raises a transient connection error once, as a connection cut right after COMMIT does."""
    real = getattr(module, name)
    calls = []

    def flaky(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return out

    monkeypatch.setattr(module, name, flaky)
    monkeypatch.setattr("durable_schedule.runner.retry.time.sleep", lambda s: None)
    return calls


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("outcome", ["succeeded", "failed"])
def test_group_commit_ack_lost__the_retry_neither_fences_nor_quarantines(
        committed_clock, define, monkeypatch, outcome, concurrency):
    d = define("test.acklost", policy=POLICY)

    @d.executor
    def run(ctx, payload):
        if outcome == "failed":
            raise RuntimeError("provider said no")
        return {"ok": True}

    work_id = d.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1",
                        payload={}).work_id
    calls = _ack_lost_once(monkeypatch, passes, "record_outcomes")
    counts = run_pass(batch=1, max_items=1, concurrency=concurrency)
    assert len(calls) == 2  # the group commit committed, its ack was lost, it was retried
    state = work_row(work_id, "state")[0]
    assert state == ("succeeded" if outcome == "succeeded" else "pending")
    # The outcome was recorded once; the retry did not invent a lost lease for it.
    assert count("durable_work_quarantine") == 0
    assert "result_quarantined" not in history(work_id)
    assert (counts.lost, counts.quarantined) == (0, 0)
    assert (counts.succeeded, counts.retried) == ((1, 0) if outcome == "succeeded" else (0, 1))
    assert len(permits(work_id)) == 1


def test_per_item_outcome_ack_lost__reconcile_before_retry_work_is_not_fenced(
        committed_clock, define, monkeypatch):
    d = define("test.acklost.reconcile", policy=POLICY,
               safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    d.executor(lambda ctx, payload: {"ok": True})
    d.reconciler(lambda ctx, payload: work.Unknown("not asked in this test"))
    work_id = d.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1",
                        payload={}).work_id
    calls = _ack_lost_once(monkeypatch, runtime, "record_attempt_outcome")
    counts = run_pass(batch=1, max_items=1)
    assert len(calls) == 2
    assert work_row(work_id, "state") == ("succeeded",)
    assert permits(work_id) == [(1, 1, "succeeded", "executor")]
    assert count("durable_work_quarantine") == 0
    assert history(work_id) == ["accepted", "admitted", "succeeded"]
    assert (counts.succeeded, counts.lost, counts.quarantined) == (1, 0, 0)
