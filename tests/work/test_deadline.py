"""docs/protocol/work.md absolute deadlines: refusal before invocation at or after D, renewals
capped by the deadline and the maximum lease lifetime, late results quarantined, first-closure
facts, and the cooperative cancellation signal."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import work
from durable_schedule.work import rows as work_rows
from tests.conftest import T0
from tests.work.conftest import MIN, count, dispatch, history, one, permits, run_pass, work_row

pytestmark = pytest.mark.django_db

SECOND = timedelta(seconds=1)
RETRY = work.RetryPolicy(lease_duration=MIN, renewal_cadence=15 * SECOND,
                         maximum_lease_lifetime=10 * MIN)
DEADLINE_ONLY = work.ExecutionPolicy(RETRY)


@pytest.fixture
def deadline_work(define):
    """``make(executor, deadline, policy=DEADLINE_ONLY) -> work_id``."""

    def make(executor, deadline, policy=DEADLINE_ONLY, name="t.deadline"):
        d = define(name, policy=policy)
        d.executor(executor)
        return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={},
                         deadline=deadline).work_id

    return make


def test_deadline__admission_at_d_is_refused_before_any_permit_or_invocation(clock,
                                                                             deadline_work):
    calls = []
    work_id = deadline_work(lambda ctx, p: calls.append(1), T0 + 60 * MIN)
    clock.set(T0 + 60 * MIN)
    counts = run_pass()
    assert (counts.refused, counts.expired, counts.admitted) == (1, 1, 0) and calls == []
    assert permits(work_id) == [] and dispatch(work_id) is None
    assert work_row(work_id, "state", "attempt", "execution_admission_closed_at",
                    "execution_admission_closed_reason", "execution_deadline_reached_at") == (
        "expired", 0, T0 + 60 * MIN, "deadline", T0 + 60 * MIN)
    assert history(work_id) == ["accepted", "expired"]


def test_deadline__shortly_before_d_the_attempt_is_admitted_and_runs(clock, deadline_work):
    calls = []
    work_id = deadline_work(lambda ctx, p: calls.append(ctx.deadline), T0 + 60 * MIN)
    clock.set(T0 + 59 * MIN)
    assert run_pass().succeeded == 1 and calls == [T0 + 60 * MIN]
    assert work_row(work_id, "execution_deadline_reached_at") == (None,)


def test_deadline__a_retry_due_at_or_after_d_is_not_released(clock, deadline_work):
    def fail(ctx, payload):
        raise RuntimeError("no")

    work_id = deadline_work(fail, T0 + 10 * SECOND)  # backoff 10 s lands exactly on D
    counts = run_pass()
    assert (counts.retried, counts.expired) == (0, 1)
    assert work_row(work_id, "state", "execution_admission_closed_reason") == (
        "expired", "deadline")


def test_deadline__renewal_is_capped_by_d_and_signals_when_no_lease_is_left(clock,
                                                                          deadline_work):
    seen = {}

    def execute(ctx, payload):
        clock.advance(150 * SECOND)
        seen["renewed"] = ctx.renew()  # now + 1 min would pass D: capped at D
        seen["dispatch"] = dispatch(ctx.work_id)
        seen["cancelled_early"] = ctx.cancelled.is_set()
        clock.advance(30 * SECOND)  # at D
        seen["at_d"] = ctx.renew()
        seen["cancelled_at_d"] = ctx.cancelled.is_set()
        return {"sent": True}

    work_id = deadline_work(execute, T0 + 3 * MIN)
    counts = run_pass()
    assert seen == {"renewed": T0 + 3 * MIN, "dispatch": (T0 + 3 * MIN, "test-worker"),
                    "cancelled_early": False, "at_d": T0 + 3 * MIN, "cancelled_at_d": True}
    assert (counts.quarantined, counts.expired, counts.succeeded) == (1, 1, 0)
    assert work_row(work_id, "state") == ("expired",)


def test_renewal__is_capped_by_the_attempts_maximum_lease_lifetime(clock, deadline_work):
    seen = []

    def execute(ctx, payload):
        clock.advance(5 * MIN)
        seen.append(ctx.renew())
        clock.advance(270 * SECOND)
        seen.append(ctx.renew())  # 9.5 min into the attempt: capped at 10 min
        clock.advance(30 * SECOND)
        seen.append(ctx.renew())
        seen.append(ctx.cancelled.is_set())
        return None

    deadline_work(execute, T0 + timedelta(hours=2))
    run_pass()
    assert seen == [T0 + 6 * MIN, T0 + 10 * MIN, T0 + 10 * MIN, True]


def test_outcome__success_at_or_after_d_is_quarantined_never_success(clock, deadline_work):
    def execute(ctx, payload):
        clock.set(T0 + 60 * MIN)  # the executor finishes exactly at D
        return {"sent": 1}

    work_id = deadline_work(execute, T0 + 60 * MIN)
    counts = run_pass()
    assert (counts.succeeded, counts.quarantined, counts.expired) == (0, 1, 1)
    assert work_row(work_id, "state", "result", "execution_admission_closed_reason",
                    "execution_deadline_reached_at") == (
        "expired", None, "deadline", T0 + 60 * MIN)
    reason, result = one("select reason, result from durable_work_quarantine")
    assert (reason, json.loads(result)) == ("late_result", {"sent": 1})
    assert permits(work_id) == [(1, 1, "quarantined", "runtime")]
    assert history(work_id)[-1] == "late_result_quarantined"


def test_outcome__a_plan_circuit_does_not_revoke_an_admitted_attempts_success(clock,
                                                                            deadline_work):
    one_slot = work.ExecutionPolicy.for_attempt_plan(
        work.RetryPolicy(maximum_attempts=1, maximum_elapsed=10 * MIN),
        work.AttemptPlan("attempt-plan-v1", (timedelta(0),), 10 * MIN))

    def execute(ctx, payload):
        clock.set(T0 + 15 * MIN)  # past the circuit (and the lease), no deadline
        return "done"

    work_id = deadline_work(execute, None, policy=one_slot)
    assert run_pass().succeeded == 1
    assert work_row(work_id, "state", "execution_admission_closed_at") == ("succeeded", None)


def test_closure__the_first_cause_is_kept_and_the_deadline_observation_is_separate(
        clock, deadline_work):
    planned = work.ExecutionPolicy.for_attempt_plan(
        work.RetryPolicy(maximum_attempts=2, maximum_elapsed=timedelta(hours=1)),
        work.AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN), 10 * MIN))
    work_id = deadline_work(lambda ctx, p: None, T0 + 20 * MIN, policy=planned)
    clock.set(T0 + 25 * MIN)  # the circuit (10 min) closed admission before D (20 min)
    run_pass()
    assert work_row(work_id, "execution_admission_closed_reason", "execution_admission_closed_at",
                    "execution_deadline_reached_at") == (
        "circuit_open", T0 + 25 * MIN, T0 + 25 * MIN)


def test_closure__facts_are_written_once_by_the_guarded_transition(clock, deadline_work):
    work_id = deadline_work(lambda ctx, p: None, T0 + 20 * MIN)
    with connection.cursor() as cur:
        cur.execute("select id from durable_work")
        ref = cur.fetchone()[0]
        cur.execute("select set_config('durable_schedule.scope_id', 'tenant-a', true)")
        row = work_rows.lock_claimed(cur, ref)
        row = work_rows.transition(cur, row, event="test", actor="t", close="circuit_open")
        clock.advance(30 * MIN)
        row = work_rows.lock_claimed(cur, ref)
        work_rows.transition(cur, row, event="test", actor="t", close="deadline")
    assert work_row(work_id, "execution_admission_closed_reason", "execution_admission_closed_at",
                    "execution_deadline_reached_at") == (
        "circuit_open", T0, T0 + 30 * MIN)


def test_cancellation__the_signal_fires_at_the_deadline_while_the_executor_runs(
        clock, deadline_work):
    fired = []

    def execute(ctx, payload):
        started = time.monotonic()
        fired.append(ctx.cancelled.wait(timeout=10))
        fired.append(time.monotonic() - started)
        return "stopped"

    deadline_work(execute, T0 + timedelta(milliseconds=200))
    run_pass()  # the database clock still reads T0: the result is on time for PostgreSQL
    assert fired[0] is True and 0.1 < fired[1] < 5


def test_cancellation__the_local_check_refuses_to_invoke_when_the_deadline_passed(
        clock, deadline_work):
    calls = []
    work_id = deadline_work(lambda ctx, p: calls.append(1), T0 + 60 * MIN)
    clock.set(T0 + 60 * MIN - timedelta(microseconds=1))
    counts = run_pass()  # PostgreSQL admits (1 us left); the local check then finds it gone
    assert (counts.admitted, counts.refused, calls) == (1, 1, [])
    assert permits(work_id) == [(1, 1, "proven_no_effect", "runtime")]
    assert work_row(work_id, "state", "attempt") == ("pending", 0)  # no attempt consumed
    assert dispatch(work_id) == (T0 + 60 * MIN, None)  # decided again at D, by the database
    clock.set(T0 + 60 * MIN)
    assert run_pass().expired == 1 and calls == []
    assert count("durable_work_quarantine") == 0


def test_watchdog__renews_at_the_cadence_in_the_background(transactional_db):
    from durable_schedule.work.executor import Watchdog, WorkContext

    renewed = threading.Event()

    def renewer(ctx):
        renewed.set()
        return T0, T0 + MIN

    ctx = WorkContext(scope="s", work_id="w", work_name="n", work_version="v", attempt=1,
                      permit_no=1, deadline=None, due_at=T0, admitted_at=T0,
                      lease_owner="o", lease_generation=1, lease_expires_at=T0 + MIN,
                      reconciling=False, renewer=renewer)
    dog = Watchdog(ctx, cadence_seconds=0.01, using="default")
    dog.start()
    try:
        assert renewed.wait(timeout=5)
    finally:
        dog.stop()
    assert not ctx.cancelled.is_set()
