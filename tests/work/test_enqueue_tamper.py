"""Issue 11 item 4: compare-or-return re-checks the stored immutable facts. A Work row changed by
SQL after acceptance is refused (DS233, naming the row), never returned as the original, and
nothing is written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import work
from durable_schedule.errors import IdempotencyConflict, WorkFactsTampered
from durable_schedule.store.transactions import scoped
from durable_schedule.work.enqueue import WorkRequest, accept_in_scope
from tests.conftest import T0
from tests.work.conftest import MIN, count

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=5, maximum_elapsed=timedelta(hours=4),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", tuple(m * MIN for m in (0, 5, 20, 60, 180)),
                        240 * MIN)


def request(**changes) -> WorkRequest:
    fields = dict(command_id="order-42", idempotency_key="invoice-42",
                  work_name="billing.send_invoice", work_version="v1", payload={"order": 42},
                  provider_safety="reconcile_before_retry")
    fields.update(changes)
    return WorkRequest(**fields)


def tamper(assignment: str) -> None:
    with connection.cursor() as cur:
        cur.execute(f"update durable_work set {assignment}")
        assert cur.rowcount == 1


def writes() -> tuple[int, int, int]:
    return (count("durable_work"), count("durable_work_dispatch"),
            count("durable_work_history"))


LEGACY = {}
OPT_IN = {"policy": work.ExecutionPolicy(RETRY), "deadline": T0 + 200 * MIN,
          "due_at": T0 + 10 * MIN}
PLANNED = {"policy": work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN)}


@pytest.mark.parametrize("base, assignment, fact", [
    pytest.param(LEGACY, "payload = '{\"order\": 43}'", "payload", id="payload"),
    pytest.param(LEGACY, "work_version = 'v2'", "work_version", id="version"),
    pytest.param(LEGACY, "work_name = 'billing.refund'", "work_name", id="name"),
    pytest.param(LEGACY, "provider_safety = 'idempotent'", "provider_safety", id="safety"),
    pytest.param(LEGACY, "retry_policy = jsonb_set(retry_policy, '{maximum_attempts}', '99')",
                 "retry_policy", id="legacy-retry"),
    pytest.param(LEGACY, "execution_deadline = '2030-01-01T13:00:00Z'", "execution_deadline",
                 id="legacy-deadline-added"),
    pytest.param(LEGACY, "accepted_due_at = accepted_due_at + interval '1 hour'", "due_at",
                 id="legacy-due-time"),
    pytest.param(OPT_IN, "retry_policy = jsonb_set(retry_policy, '{maximum_attempts}', '99')",
                 "retry_policy", id="policy"),
    pytest.param(OPT_IN, "execution_deadline = execution_deadline + interval '1 day'",
                 "execution_deadline", id="deadline"),
    pytest.param(OPT_IN, "accepted_due_at = accepted_due_at - interval '5 minutes'", "due_at",
                 id="due-time"),
    pytest.param(PLANNED, "attempt_plan = jsonb_set(attempt_plan, '{circuit}', '1')",
                 "attempt_plan", id="plan"),
    pytest.param(PLANNED, "attempt_plan = NULL", "attempt_plan", id="plan-dropped"),
])
def test_tampered__a_row_changed_after_acceptance_is_refused_not_returned(clock, base,
                                                                         assignment, fact):
    first = work.enqueue("tenant-a", request(**base))
    tamper(assignment)
    before = writes()
    with pytest.raises(WorkFactsTampered) as raised:
        work.enqueue("tenant-a", request(**base))
    error = raised.value
    assert error.code == "DS233"
    assert error.context["work_id"] == str(first.work_id)
    assert error.context["scope"] == "tenant-a"
    assert error.context["command_id"] == "order-42"
    assert error.context["changed_facts"] == [fact]
    assert str(first.work_id) in str(error)
    assert writes() == before


def test_tampered__the_moving_due_at_of_a_retried_row_is_not_tampering(clock):
    """due_at moves with every retry (the runtime's own write): a duplicate stays a duplicate."""
    first = work.enqueue("tenant-a", request(**OPT_IN))
    tamper("due_at = due_at + interval '3 hours', attempt = 1")
    again = work.enqueue("tenant-a", request(**OPT_IN))
    assert (again.work_id, again.created) == (first.work_id, False)


def test_tampered__a_duplicate_whose_numbers_jsonb_respelled_is_still_the_original(clock):
    payload = {"big": 1e22, "small": 1e-7, "neg": -0.0, "n": 10**30}
    first = work.enqueue("tenant-a", request(payload=payload))
    again = work.enqueue("tenant-a", request(payload=payload))
    assert (again.work_id, again.created) == (first.work_id, False)


def test_tampered__older_rows_keep_the_digest_check_for_the_due_time(clock):
    first = work.enqueue("tenant-a", request())
    tamper("accepted_due_at = NULL")
    again = work.enqueue("tenant-a", request())
    assert again.work_id == first.work_id


def test_tampered__a_request_with_the_tampered_facts_is_a_conflict_not_the_original(clock):
    work.enqueue("tenant-a", request())
    tamper("payload = '{\"order\": 43}'")
    with pytest.raises(IdempotencyConflict):
        work.enqueue("tenant-a", request(payload={"order": 43}))
    assert writes() == (1, 1, 1)


def test_tampered__the_schedule_bridge_path_refuses_a_tampered_row_too(clock):
    work.enqueue("tenant-a", request())
    tamper("payload = '{\"order\": 43}'")
    with pytest.raises(WorkFactsTampered), scoped("tenant-a") as cur:
        accept_in_scope(cur, "tenant-a", request())
    assert writes() == (1, 1, 1)


def test_tampered__enqueue_many_refuses_the_whole_batch(clock):
    work.enqueue("tenant-a", request())
    tamper("payload = '{\"order\": 43}'")
    with pytest.raises(WorkFactsTampered) as raised:
        work.enqueue_many("tenant-a", [request(command_id="new-1"), request(),
                                       request(command_id="new-2")])
    assert raised.value.context["refused_items"] == [(1, "tampered")]
    assert writes() == (1, 1, 1)
