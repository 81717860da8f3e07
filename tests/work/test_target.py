"""The bridge contract: ``definition.target()`` snapshots and their round trip to a request."""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.errors import DurableError, InvalidArgument, PlannedWorkWithDueTime
from durable_schedule.evaluation.fingerprint import SCHEMA_V1, SCHEMA_V2
from tests.conftest import T0
from tests.work.conftest import MIN

RETRY = work.RetryPolicy(maximum_attempts=5, maximum_elapsed=timedelta(hours=4),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLANNED = work.ExecutionPolicy.for_attempt_plan(RETRY, work.AttemptPlan(
    "attempt-plan-v1", tuple(m * MIN for m in (0, 5, 20, 60, 180)), 240 * MIN))


@pytest.fixture
def planned(define):
    return define("t.target", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
                  policy=PLANNED)


def test_target__is_a_json_snapshot_that_round_trips(planned):
    target = planned.target(payload={"order": 42}, deadline_after=timedelta(hours=3))
    stored = json.loads(json.dumps(target.to_json()))
    again = work.WorkTarget.from_json(stored)
    assert again == target and hash(again) == hash(target)
    assert (again.work_name, again.work_version, again.provider_safety) == (
        "t.target", "v1", "reconcile_before_retry")
    assert again.policy == PLANNED and again.deadline_after_us == 3 * 3600 * 10**6


def test_target__is_immutable_and_detached_from_the_callers_payload(planned):
    payload = {"order": 42, "lines": [1]}
    target = planned.target(payload=payload)
    payload["lines"].append(2)
    target.to_json()["payload"]["order"] = 0
    assert target.payload == {"order": 42, "lines": [1]}
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.work_name = "other"


def test_target__to_request_fixes_the_deadline_from_the_base_instant(planned):
    target = planned.target(payload={"order": 1}, deadline_after=timedelta(hours=3))
    wid = uuid.uuid5(uuid.NAMESPACE_URL, "occurrence")
    request = target.to_request(command_id="c", idempotency_key="k", work_id=wid,
                                accepted_base=T0)
    assert (request.deadline, request.work_id, request.policy) == (
        T0 + timedelta(hours=3), wid, PLANNED)
    assert request.fingerprint.schema == SCHEMA_V2
    with pytest.raises(InvalidArgument):
        target.to_request(command_id="c", idempotency_key="k", work_id=wid)
    with pytest.raises(PlannedWorkWithDueTime):
        target.to_request(command_id="c", idempotency_key="k", work_id=wid, due_at=T0,
                          accepted_base=T0)


def test_target__legacy_definition_gives_a_v1_request(define):
    legacy = define("t.legacy_target")
    request = legacy.target(payload=[1, 2]).to_request(command_id="c", idempotency_key="k",
                                                       work_id=None, due_at=T0)
    assert request.fingerprint.schema == SCHEMA_V1 and request.due_at == T0


@pytest.mark.parametrize("mutate", [
    lambda d: d.pop("deadline_after_us"),
    lambda d: d.update(extra=1),
    lambda d: d.update(schema="durable_schedule.work.target.v0"),
    lambda d: d.update(deadline_after_us=0),
    lambda d: d.update(provider_safety="at_most_once"),
])
def test_target__from_json_refuses_a_tampered_snapshot(planned, mutate):
    stored = planned.target(payload={}).to_json()
    mutate(stored)
    with pytest.raises(DurableError):
        work.WorkTarget.from_json(stored)


@pytest.mark.parametrize("after", [timedelta(0), -MIN, 0.5])
def test_target__refuses_a_non_positive_or_imprecise_relative_deadline(planned, after):
    with pytest.raises(DurableError):
        planned.target(payload={}, deadline_after=after)


@pytest.mark.django_db
def test_target__a_stored_snapshot_enqueued_again_is_an_identical_duplicate(clock, planned):
    stored = json.loads(json.dumps(planned.target(payload={"x": 0.1, "y": [1, 2]},
                                                  deadline_after=MIN).to_json()))
    kwargs = dict(command_id="c", idempotency_key="k", work_id=None, accepted_base=T0)
    first = work.enqueue("tenant-a", planned.target(payload={"y": [1, 2], "x": 0.1},
                                                    deadline_after=MIN).to_request(**kwargs))
    again = work.enqueue("tenant-a", work.WorkTarget.from_json(stored).to_request(**kwargs))
    assert (again.work_id, again.created) == (first.work_id, False)
