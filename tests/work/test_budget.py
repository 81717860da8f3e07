"""Issue 11 items 3 and 5: the local lease budget starts before admission, and admission refuses
an exhausted attempt counter.

Item 3 runs the real worker process and stalls it for real between the permit commit and the
invocation (the stall barrier at ``work-permit-after-commit``: the process sleeps there, like a
GC pause or a stopped host). The database clock stays fixed (controlled clock), so by the
database's own account the lease still holds when the outcome is recorded; only the worker's
monotonic budget -- started before the admission statement -- can tell that the one-second
lease ended during the stall. Before the fix the budget started after the stall and the
executor ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from demo.models import Effect

from durable_schedule import work
from durable_schedule.barriers import WORK_PERMIT_AFTER_COMMIT
from tests.conftest import T0, database_url
from tests.work.conftest import MIN, history, one, permits, run_pass, work_row

ROOT = Path(__file__).resolve().parents[2]


def stalled_worker(seconds: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_SCHEDULE_")}
    env["DATABASE_URL"] = database_url()
    env["DURABLE_SCHEDULE_STALL_AT"] = f"{WORK_PERMIT_AFTER_COMMIT}={seconds}"
    done = subprocess.run(
        [sys.executable, "testproject/manage.py", "process_work", "--lease-owner", "stalled",
         "--max-items", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "stall barrier" in done.stderr
    return done


def accept(name: str):
    work.autodiscover()
    return work.lookup(name, "v1").enqueue(scope="tenant-a", command="c", idempotency_key="k",
                                           payload={}).work_id


@pytest.mark.crash
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", ["demo.short_lease", "demo.short_lease_reconciled"])
def test_budget__a_worker_stalled_past_its_lease_does_not_invoke(committed_clock, name):
    work_id = accept(name)
    out = stalled_worker(1.5).stdout  # the lease is 1 s; the stall is longer
    assert "admitted=1" in out and "refused=1" in out and "succeeded=0" in out
    assert Effect.objects.filter(work_id=work_id).count() == 0
    # Nothing ran, and the runtime knows it: the permit is proven without effect, no slot used.
    assert history(work_id)[-1] == "not_invoked"
    assert permits(work_id) == [(1, 1, "proven_no_effect", "runtime")]
    assert work_row(work_id, "state", "attempt") == ("pending", 0)
    # It stays recoverable: due again when the lease would have ended, then it runs once.
    committed_clock.advance(timedelta(seconds=1))
    assert run_pass().succeeded == 1
    assert Effect.objects.filter(work_id=work_id).count() == 1


@pytest.mark.crash
@pytest.mark.django_db(transaction=True)
def test_budget__an_unstalled_worker_invokes(committed_clock):
    """The control: the same Work and worker without the stall run the executor."""
    work_id = accept("demo.short_lease")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_SCHEDULE_")}
    env["DATABASE_URL"] = database_url()
    done = subprocess.run(
        [sys.executable, "testproject/manage.py", "process_work", "--max-items", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "succeeded=1" in done.stdout, done.stderr[-3000:]
    assert Effect.objects.filter(work_id=work_id).count() == 1


def test_budget__context_budget_counts_from_the_origin_not_from_construction():
    """Unit level: a context built 2 s after its origin, with a 1 s lease, is past its cancel
    point at once (before the fix the budget was counted from construction)."""
    import time

    from durable_schedule.work.executor import WorkContext

    ctx = WorkContext(scope="s", work_id="w", work_name="n", work_version="v1", attempt=1,
                      permit_no=1, deadline=None, due_at=T0, admitted_at=T0, lease_owner="o",
                      lease_generation=1, lease_expires_at=T0 + timedelta(seconds=1),
                      reconciling=False, renewer=lambda c: (T0, T0),
                      budget_origin=time.monotonic() - 2)
    assert ctx.past_cancel_point() and ctx.cancelled.is_set()


# ------------------------------------------------------------------ item 5: attempt counter

@pytest.mark.django_db
def test_budget__attempt_counter_at_the_maximum_is_refused_and_fails(clock, define):
    retry = work.RetryPolicy(maximum_attempts=5)
    d = define("test.counted", policy=work.ExecutionPolicy.from_retry_policy(retry))
    ran = []
    d.executor(lambda ctx, payload: ran.append(ctx.attempt) or {"ok": True})
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                        payload={}).work_id
    one("update durable_work set attempt = 99 where work_id = %s returning 1", (work_id,))
    counts = run_pass()
    assert ran == []  # no invocation
    assert (counts.admitted, counts.refused, counts.failed) == (0, 1, 1)
    state, attempt, reason, closed, error = work_row(
        work_id, "state", "attempt", "execution_admission_closed_reason",
        "execution_admission_closed_at", "last_error")
    assert (state, attempt, reason) == ("failed", 99, "attempts_exhausted")
    assert closed == T0 and json.loads(error)["code"] == "DS223"
    assert permits(work_id) == []
    assert history(work_id)[-1] == "failed"
    assert run_pass().claimed == 0  # terminal: no dispatch row left


@pytest.mark.django_db
def test_budget__planned_work_at_its_last_slot_count_is_refused_as_plan_exhausted(clock, define):
    retry = work.RetryPolicy(maximum_attempts=2, maximum_elapsed=timedelta(hours=1))
    plan = work.AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN), 30 * MIN)
    d = define("test.planned_counted",
               policy=work.ExecutionPolicy.for_attempt_plan(retry, plan))
    d.executor(lambda ctx, payload: pytest.fail("must not be invoked"))
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                        payload={}).work_id
    one("update durable_work set attempt = 2 where work_id = %s returning 1", (work_id,))
    assert run_pass().failed == 1
    assert work_row(work_id, "state", "execution_admission_closed_reason") == (
        "failed", "plan_exhausted")


@pytest.mark.django_db
def test_budget__the_last_allowed_attempt_is_still_admitted(clock, define):
    retry = work.RetryPolicy(maximum_attempts=5)
    d = define("test.last", policy=work.ExecutionPolicy.from_retry_policy(retry))
    d.executor(lambda ctx, payload: {"attempt": ctx.attempt})
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                        payload={}).work_id
    one("update durable_work set attempt = 4 where work_id = %s returning 1", (work_id,))
    assert run_pass().succeeded == 1
    assert work_row(work_id, "state", "attempt") == ("succeeded", 5)
