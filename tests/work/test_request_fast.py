"""``enqueue.new_request`` (what a definition's ``request`` builds) gives the instance the
``WorkRequest`` dataclass ``__init__`` gives, with the same refusals; ``acceptance._accepted``
gives the ``AcceptedWork`` its ``__init__`` gives."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from durable_schedule.errors import DurableError
from durable_schedule.evaluation.policy import AttemptPlan, ExecutionPolicy, RetryPolicy
from durable_schedule.work import acceptance
from durable_schedule.work import codec as codecs
from durable_schedule.work.enqueue import WorkRequest, new_request
from durable_schedule.work.registry import WorkDefinition
from durable_schedule.work.safety import ProviderSafety

MIN = timedelta(minutes=1)
A = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PLANNED = ExecutionPolicy.for_attempt_plan(
    RetryPolicy(maximum_attempts=2), AttemptPlan("attempt-plan-v1", (0 * MIN, 5 * MIN), 10 * MIN))


class SubUUID(uuid.UUID):
    pass


BASE = dict(command_id="imp-1", idempotency_key="rôw ✓", work_name="t.fast", work_version="v1",
            payload={"row": 1, "z": [1, 2.5], "t": (1, 2)}, provider_safety="idempotent",
            policy=None, deadline=None, due_at=None, work_id=None, queue="default", priority=0)
CASES = [
    {},
    {"policy": ExecutionPolicy(RetryPolicy(maximum_attempts=3)), "queue": "q1", "priority": -7},
    {"policy": PLANNED, "deadline": A + 60 * MIN},
    {"deadline": A, "due_at": datetime(2029, 12, 31, 13, 0, tzinfo=timezone(timedelta(hours=1)))},
    {"work_id": uuid.UUID(int=5)},
    {"work_id": SubUUID(int=6), "provider_safety": ProviderSafety.RECONCILE_BEFORE_RETRY},
]


def both(changes: dict) -> tuple[WorkRequest, WorkRequest]:
    fields = {**BASE, **changes}
    return WorkRequest(**fields), new_request(**fields)


@pytest.mark.parametrize("changes", CASES)
def test_new_request__is_the_instance_the_dataclass_init_builds(changes):
    slow, fast = both(changes)
    assert type(fast) is WorkRequest
    assert fast == slow and repr(fast) == repr(slow)
    for name in ("work_id", "deadline", "due_at", "provider_safety", "payload"):
        assert type(getattr(fast, name)) is type(getattr(slow, name))
    # every field, the canonical payload kept beside them, and the facts derived from them
    assert fast.__dict__ == slow.__dict__
    assert fast.fingerprint == slow.fingerprint and fast.retry_json == slow.retry_json
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.command_id = "other"
    assert dataclasses.replace(fast, priority=3) == dataclasses.replace(slow, priority=3)


REFUSED = [
    {"command_id": " padded"},
    {"idempotency_key": "a\u200eb"},
    {"idempotency_key": 7},
    {"work_name": ""},
    {"queue": "bad queue\n"},
    {"priority": 101},
    {"priority": True},
    {"payload": {"x": float("nan")}},
    {"provider_safety": "sometimes"},
    {"policy": "fast"},
    {"deadline": datetime(2030, 1, 1)},
    {"policy": PLANNED, "due_at": A},
    {"work_id": "not-a-uuid"},
]


@pytest.mark.parametrize("changes", REFUSED)
def test_new_request__refuses_what_the_dataclass_init_refuses(changes):
    fields = {**BASE, **changes}
    with pytest.raises(Exception) as slow:
        WorkRequest(**fields)
    with pytest.raises(Exception) as fast:
        new_request(**fields)
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)
    if isinstance(slow.value, DurableError):
        assert fast.value.code == slow.value.code


def test_definition_request__equals_the_dataclass_built_request():
    definition = WorkDefinition("t.fast", "v1", ProviderSafety.IDEMPOTENT, None, codecs.JsonCodec())
    got = definition.request(command="imp-1", idempotency_key="k", payload={"a": [1]},
                             deadline=A, queue="q1", priority=4)
    want = WorkRequest(command_id="imp-1", idempotency_key="k", work_name="t.fast",
                       work_version="v1", payload={"a": [1]}, provider_safety="idempotent",
                       policy=definition.policy, deadline=A, queue="q1", priority=4)
    assert got == want and got.__dict__ == want.__dict__


def test_accepted__is_the_instance_the_dataclass_init_builds():
    args = (uuid.UUID(int=9), "c", "k", "pending", A, True)
    fast, slow = acceptance._accepted(*args), acceptance.AcceptedWork(*args)
    assert type(fast) is acceptance.AcceptedWork
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert fast.__dict__ == slow.__dict__
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.state = "running"
