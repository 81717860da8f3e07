"""Enqueue fingerprints v1/v2 (docs/protocol/work.md "Identity and outcome truth"); the bytes never
change."""

from __future__ import annotations

import enum
import hashlib
import inspect
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from durable_schedule.errors import (
    InvalidArgument,
    InvalidExecutionDeadline,
    PlannedWorkWithDueTime,
)
from durable_schedule.evaluation.fingerprint import (
    SCHEMA_V1,
    SCHEMA_V2,
    Fingerprint,
    canonical_bytes,
    fingerprint,
)
from durable_schedule.evaluation.policy import (
    AttemptPlan,
    ExecutionDeadline,
    ExecutionPolicy,
    RetryPolicy,
)

MIN = timedelta(minutes=1)
A = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PLAN = AttemptPlan("attempt-plan-v1", tuple(o * MIN for o in (0, 5, 20, 60, 180)), 240 * MIN)
RETRY = RetryPolicy(
    maximum_attempts=5,
    maximum_elapsed=timedelta(hours=4),
    initial_retry_delay=5 * MIN,
    maximum_retry_delay=timedelta(hours=1),
)
PLANNED = ExecutionPolicy.for_attempt_plan(RETRY, PLAN)
DEADLINE_ONLY = ExecutionPolicy.from_retry_policy(RETRY)

V1: dict[str, Any] = dict(
    work_name="billing.send_invoice",
    work_version="v1",
    payload_bytes=b'{"order":42}',
    provider_safety="reconcile_before_retry",
    policy=None,
    deadline=None,
    due_at=A,
)
V2: dict[str, Any] = dict(
    V1, work_version="v2", policy=PLANNED, deadline=A + 180 * MIN, due_at=None
)


def _frame(b: bytes) -> bytes:
    return len(b).to_bytes(8, "big") + b


def _field(name: str, value: bytes) -> bytes:
    return _frame(name.encode()) + b"+" + _frame(value)


# ------------------------------------------------------------------ pinned bytes
def test_v1__canonical_bytes_are_pinned() -> None:
    expected = b"".join(
        [
            _field("schema", b"durable_schedule.work.enqueue.v1"),
            _field("work_name", b"billing.send_invoice"),
            _field("work_version", b"v1"),
            _field("payload", b'{"order":42}'),
            _field("provider_safety", b"reconcile_before_retry"),
            _field("due_at", b"1893499200000000"),  # 2030-01-01T12:00Z in epoch microseconds
        ]
    )
    assert canonical_bytes(**V1) == (SCHEMA_V1, expected)


def test_v1__digest_is_pinned() -> None:
    assert fingerprint(**V1) == Fingerprint(
        SCHEMA_V1, "63af251da48882751906629756f5a9e81d75013da52acb5e702683a19936d09b"
    )


def test_v2__digest_is_pinned() -> None:
    assert fingerprint(**V2) == Fingerprint(
        SCHEMA_V2, "ce519d36381440389f4b9b127c719ea5bc0f4750a76ebdf893224dabd4adede2"
    )


def test_v2__digest_is_sha256_of_canonical_bytes() -> None:
    schema, data = canonical_bytes(**V2)
    assert schema == SCHEMA_V2 and data.startswith(_field("schema", SCHEMA_V2.encode()))
    assert fingerprint(**V2).digest == hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------ schema selection
@pytest.mark.parametrize(
    "policy, deadline, schema",
    [
        (None, None, SCHEMA_V1),
        (DEADLINE_ONLY, None, SCHEMA_V2),
        (None, A + MIN, SCHEMA_V2),
        (DEADLINE_ONLY, A + MIN, SCHEMA_V2),
        (PLANNED, None, SCHEMA_V2),
    ],
)
def test_schema__v1_only_without_policy_and_deadline(
    policy: ExecutionPolicy | None, deadline: datetime | None, schema: str
) -> None:
    due_at = None if policy is PLANNED else A
    got = fingerprint(**dict(V1, policy=policy, deadline=deadline, due_at=due_at))
    assert got.schema == schema


def test_acceptance_instant_is_never_an_input() -> None:
    assert not any("accept" in name for name in inspect.signature(fingerprint).parameters)


# ------------------------------------------------------------------ identity
def test_identical_inputs__give_identical_digests() -> None:
    assert fingerprint(**V1) == fingerprint(**dict(V1))
    assert fingerprint(**V2) == fingerprint(**dict(V2, policy=replace(PLANNED)))


def test_identical_instants_in_other_offsets__give_identical_digests() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert fingerprint(**V1) == fingerprint(**dict(V1, due_at=A.astimezone(plus_two)))
    shifted = ExecutionDeadline((A + 180 * MIN).astimezone(plus_two))
    assert fingerprint(**V2) == fingerprint(**dict(V2, deadline=shifted))


def test_provider_safety_enum__hashes_its_value() -> None:
    class Safety(enum.Enum):
        RECONCILE = "reconcile_before_retry"

    assert fingerprint(**dict(V1, provider_safety=Safety.RECONCILE)) == fingerprint(**V1)


@pytest.mark.parametrize(
    "change",
    [
        {"work_name": "billing.send_receipt"},
        {"work_version": "v3"},
        {"payload_bytes": b'{"order":43}'},
        {"provider_safety": "safe_to_retry"},
        {"due_at": A + timedelta(microseconds=1)},
        {"due_at": None},
        {"work_name": "billing.send_invoicev", "work_version": "1"},  # framing, not concatenation
    ],
)
def test_v1__each_changed_field_changes_the_digest(change: dict[str, Any]) -> None:
    assert fingerprint(**dict(V1, **change)).digest != fingerprint(**V1).digest


def _planned(**retry_changes: Any) -> ExecutionPolicy:
    return ExecutionPolicy.for_attempt_plan(replace(RETRY, **retry_changes), PLAN)


def _with_plan(offsets: tuple[int, ...], circuit: int) -> ExecutionPolicy:
    plan = AttemptPlan("attempt-plan-v1", tuple(o * MIN for o in offsets), circuit * MIN)
    return ExecutionPolicy.for_attempt_plan(replace(RETRY, maximum_attempts=len(offsets)), plan)


@pytest.mark.parametrize(
    "change",
    [
        {"work_name": "billing.send_receipt"},
        {"work_version": "v3"},
        {"payload_bytes": b""},
        {"provider_safety": "safe_to_retry"},
        {"policy": _planned(maximum_elapsed=timedelta(hours=5))},
        {"policy": _planned(initial_retry_delay=6 * MIN)},
        {"policy": _planned(maximum_retry_delay=timedelta(hours=2))},
        {"policy": _planned(lease_duration=2 * MIN)},
        {"policy": _planned(renewal_cadence=timedelta(seconds=16))},
        {"policy": _planned(maximum_lease_lifetime=11 * MIN)},
        {"policy": _planned(backoff_algorithm="fixed-v1")},
        {"policy": _with_plan((0, 5, 20, 60, 181), 240)},
        {"policy": _with_plan((0, 5, 20, 60, 180), 239)},
        {"policy": _with_plan((0, 5, 20, 60), 240)},
        {"policy": DEADLINE_ONLY},
        {"deadline": A + 180 * MIN + timedelta(microseconds=1)},
        {"deadline": None},
    ],
)
def test_v2__each_changed_field_changes_the_digest(change: dict[str, Any]) -> None:
    assert fingerprint(**dict(V2, **change)).digest != fingerprint(**V2).digest


def test_v2__maximum_attempts_and_due_time_change_the_digest() -> None:
    base = dict(V2, policy=DEADLINE_ONLY, due_at=A)
    more = ExecutionPolicy.from_retry_policy(replace(RETRY, maximum_attempts=6))
    assert fingerprint(**dict(base, policy=more)).digest != fingerprint(**base).digest
    later = dict(base, due_at=A + MIN)
    assert fingerprint(**later).digest != fingerprint(**base).digest


# ------------------------------------------------------------------ refusals
def test_planned_request__refuses_a_due_time() -> None:
    with pytest.raises(PlannedWorkWithDueTime):
        fingerprint(**dict(V2, due_at=A))


def test_fingerprint__refuses_naive_deadline_and_non_bytes_payload() -> None:
    with pytest.raises(InvalidExecutionDeadline):
        fingerprint(**dict(V2, deadline=datetime(2030, 1, 1)))
    with pytest.raises(InvalidArgument):
        fingerprint(**dict(V1, payload_bytes='{"order":42}'))
