"""Issue 11 ("also"): a per-request execution policy on ``definition.enqueue(..., policy=...)``,
validated and fingerprinted like any request policy (docs/work.md "Policies")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.errors import IdempotencyConflict, InvalidArgument, InvalidRetryPolicy
from durable_schedule.evaluation.fingerprint import SCHEMA_V1, SCHEMA_V2
from tests.work.conftest import MIN, count, work_row

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1),
                         initial_retry_delay=MIN, maximum_retry_delay=10 * MIN)
DEFAULT = work.ExecutionPolicy(work.RetryPolicy(maximum_attempts=7))


@pytest.fixture
def mail(define):
    return define("t.mail", policy=DEFAULT)


def enqueue(definition, key="k", **kwargs):
    return definition.enqueue(scope="tenant-a", command="c", idempotency_key=key,
                              payload={"to": "a@example.com"}, **kwargs)


def stored_attempts(accepted) -> int:
    import json

    return json.loads(work_row(accepted.work_id, "retry_policy")[0])["maximum_attempts"]


def test_policy__left_out_the_definitions_policy_applies(clock, mail):
    accepted = enqueue(mail)
    assert stored_attempts(accepted) == 7
    assert work_row(accepted.work_id, "fingerprint_schema") == (SCHEMA_V2,)


def test_policy__a_request_policy_overrides_the_definitions(clock, mail):
    accepted = enqueue(mail, policy=work.ExecutionPolicy(RETRY))
    assert stored_attempts(accepted) == 3
    assert work_row(accepted.work_id, "fingerprint_schema") == (SCHEMA_V2,)
    assert work.get("tenant-a", accepted.work_id).execution.policy.retry == RETRY


def test_policy__none_asks_for_legacy_timing_and_the_v1_fingerprint(clock, mail):
    accepted = enqueue(mail, policy=None)
    assert work_row(accepted.work_id, "fingerprint_schema", "attempt_plan") == (SCHEMA_V1, None)
    assert stored_attempts(accepted) == work.RetryPolicy().maximum_attempts


def test_policy__is_a_fingerprinted_fact_a_duplicate_with_another_policy_conflicts(clock, mail):
    first = enqueue(mail, policy=work.ExecutionPolicy(RETRY))
    assert enqueue(mail, policy=work.ExecutionPolicy(RETRY)).work_id == first.work_id
    with pytest.raises(IdempotencyConflict):
        enqueue(mail)  # the definition's policy differs from the one accepted
    assert count("durable_work") == 1


def test_policy__a_plan_given_per_request_is_validated_and_stored(clock, mail):
    plan = work.AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN, 20 * MIN), 30 * MIN)
    accepted = enqueue(mail, policy=work.ExecutionPolicy.for_attempt_plan(RETRY, plan))
    assert work.get("tenant-a", accepted.work_id).execution.policy.plan == plan


@pytest.mark.parametrize("bad, error", [
    ({"retry": {}}, InvalidArgument),
    ("exponential", InvalidArgument),
])
def test_policy__not_a_policy_is_refused_before_any_write(clock, mail, bad, error):
    with pytest.raises(error):
        enqueue(mail, policy=bad)
    assert count("durable_work") == 0


def test_policy__an_invalid_retry_policy_is_refused_where_it_is_built(clock, mail):
    with pytest.raises(InvalidRetryPolicy):
        enqueue(mail, policy=work.ExecutionPolicy(work.RetryPolicy(maximum_attempts=0)))
    assert count("durable_work") == 0


def test_policy__request_takes_the_same_keyword(clock, mail):
    req = mail.request(command="c", idempotency_key="k", payload={}, policy=None)
    assert req.policy is None and req.fingerprint.schema == SCHEMA_V1
