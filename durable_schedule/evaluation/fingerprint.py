"""Canonical enqueue fingerprints v1 and v2 (docs/protocol/work.md, "Identity and outcome truth").

A fingerprint identifies the semantic facts of an enqueue request, so that an identical
duplicate under the same command / idempotency key resolves to the original acceptance and a
changed one conflicts. Legacy requests (no execution policy, no deadline) use schema v1; opt-in
requests use v2, which adds retry and lease settings, plan version and ordered offsets, circuit,
deadline and the permitted initial due time. The database acceptance instant is never hashed.

Canonical bytes (these bytes must never change; a change needs a new schema id):

* A *frame* is ``len(b)`` as 8-byte big-endian unsigned followed by the bytes ``b``.
* The canonical form is a fixed sequence of fields. Each field is ``frame(name)`` followed by
  ``b"-"`` when the value is absent, or ``b"+" + frame(value)`` when present.
* Values: strings as UTF-8; the payload as its raw bytes; integers as ASCII decimal (``-`` sign
  when negative); durations as integer microseconds; instants as integer microseconds since
  1970-01-01T00:00:00Z.
* The first field is always ``schema`` with the schema id, so v1 and v2 never collide.

v1 fields: schema, work_name, work_version, payload, provider_safety, due_at.
v2 fields: schema, work_name, work_version, payload, provider_safety, retry.maximum_attempts,
retry.maximum_elapsed_us, retry.initial_retry_delay_us, retry.maximum_retry_delay_us,
retry.lease_duration_us, retry.renewal_cadence_us, retry.maximum_lease_lifetime_us,
retry.backoff_algorithm, plan.version, plan.offset_count, plan.offsets_us (each offset framed
inside the value), plan.circuit_us, deadline, due_at. Absent policy / plan fields are encoded as
absent. The digest is the lowercase hex SHA-256 of the canonical bytes.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum

from durable_schedule.errors import InvalidArgument, PlannedWorkWithDueTime
from durable_schedule.evaluation.policy import (
    ExecutionDeadline,
    ExecutionPolicy,
    as_instant,
    deadline_instant,
)

SCHEMA_V1 = "durable_schedule.work.enqueue.v1"
SCHEMA_V2 = "durable_schedule.work.enqueue.v2"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICROSECOND = timedelta(microseconds=1)
_Value = bytes | str | int | timedelta | datetime | None


@dataclass(frozen=True)
class Fingerprint:
    """A fingerprint schema id and the hex SHA-256 digest of the canonical bytes."""

    schema: str
    digest: str


def _frame(b: bytes) -> bytes:
    return len(b).to_bytes(8, "big") + b


def _encode(value: _Value) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, datetime):
        return str((value - _EPOCH) // _ONE_MICROSECOND).encode("ascii")
    if isinstance(value, timedelta):
        return str(value // _ONE_MICROSECOND).encode("ascii")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode("ascii")
    raise InvalidArgument("unsupported fingerprint value", type=type(value).__name__)


def _field(name: str, value: _Value) -> bytes:
    head = _frame(name.encode("ascii"))
    if value is None:
        return head + b"-"
    return head + b"+" + _frame(_encode(value))


def _text(value: object, field: str) -> str:
    if isinstance(value, Enum):
        value = value.value
    if not isinstance(value, str):
        raise InvalidArgument(f"{field} must be a string", got=type(value).__name__)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{field} is not encodable as UTF-8") from None
    return value


def canonical_bytes(
    *,
    work_name: str,
    work_version: str,
    payload_bytes: bytes,
    provider_safety: str,
    policy: ExecutionPolicy | None,
    deadline: datetime | ExecutionDeadline | None,
    due_at: datetime | None,
) -> tuple[str, bytes]:
    """The schema id and canonical bytes of a request (see the module docstring)."""
    if not isinstance(payload_bytes, bytes | bytearray | memoryview):
        raise InvalidArgument("payload_bytes must be bytes", got=type(payload_bytes).__name__)
    if policy is not None and not isinstance(policy, ExecutionPolicy):
        raise InvalidArgument("policy must be an ExecutionPolicy or None")
    d = deadline_instant(deadline)
    due = None if due_at is None else as_instant(due_at, "due_at")
    if policy is not None and policy.plan is not None and due is not None:
        raise PlannedWorkWithDueTime("a planned request cannot also provide due_at")
    schema = SCHEMA_V1 if policy is None and d is None else SCHEMA_V2
    parts = [
        _field("schema", schema),
        _field("work_name", _text(work_name, "work_name")),
        _field("work_version", _text(work_version, "work_version")),
        _field("payload", bytes(payload_bytes)),
        _field("provider_safety", _text(provider_safety, "provider_safety")),
    ]
    if schema == SCHEMA_V2:
        parts += [*_policy_fields(policy), _field("deadline", d)]
    parts.append(_field("due_at", due))
    return schema, b"".join(parts)


def fingerprint(
    *,
    work_name: str,
    work_version: str,
    payload_bytes: bytes,
    provider_safety: str,
    policy: ExecutionPolicy | None,
    deadline: datetime | ExecutionDeadline | None,
    due_at: datetime | None,
) -> Fingerprint:
    """Fingerprint an enqueue request: v1 when policy and deadline are both None, else v2.

    ``provider_safety`` may be a string or a string-valued Enum (its value is hashed). A
    planned policy with a ``due_at`` raises PlannedWorkWithDueTime (docs/protocol/work.md: a planned
    request starts at its acceptance instant).

    The bytes hashed are exactly :func:`canonical_bytes`; for plain-string names the parts every
    request of one definition shares (the head and the policy fields) are encoded once and
    reused (:func:`_shared_head`, :func:`_shared_policy`), which is most of the encoding's cost
    in an ``enqueue_many``. tests/evaluation/test_fingerprint_fast.py pins that both give the
    same digest.
    """
    fast = (type(work_name) is str and type(work_version) is str
            and type(provider_safety) is str and type(payload_bytes) is bytes
            and (policy is None or type(policy) is ExecutionPolicy))
    if fast:
        # the checks of canonical_bytes, in its order
        d = deadline_instant(deadline)
        due = None if due_at is None else as_instant(due_at, "due_at")
        if policy is not None and policy.plan is not None and due is not None:
            raise PlannedWorkWithDueTime("a planned request cannot also provide due_at")
        schema = SCHEMA_V1 if policy is None and d is None else SCHEMA_V2
        try:
            policy_part = _shared_policy(schema, provider_safety, policy)
        except TypeError:  # an unhashable plan (offsets given as a list): encode it in full
            fast = False
    if not fast:
        schema, data = canonical_bytes(
            work_name=work_name,
            work_version=work_version,
            payload_bytes=payload_bytes,
            provider_safety=provider_safety,
            policy=policy,
            deadline=deadline,
            due_at=due_at,
        )
        return Fingerprint(schema=schema, digest=hashlib.sha256(data).hexdigest())
    parts = [_shared_head(schema, work_name, work_version), _PAYLOAD_HEAD,
             len(payload_bytes).to_bytes(8, "big"), payload_bytes, policy_part]
    if schema == SCHEMA_V2:
        parts.append(_field("deadline", d))
    parts.append(_NO_DUE_AT if due is None else _field("due_at", due))
    return Fingerprint(schema=schema, digest=hashlib.sha256(b"".join(parts)).hexdigest())


#: ``_field("payload", value)`` is this head, then ``_frame(value)``; ``_field("due_at", None)``
#: is the same bytes for every request without a due time. Made once, not per request.
_PAYLOAD_HEAD = _field("payload", b"")[:-8]
_NO_DUE_AT = _field("due_at", None)


@functools.lru_cache(maxsize=512)
def _shared_head(schema: str, work_name: str, work_version: str) -> bytes:
    """The schema, work_name and work_version fields of :func:`canonical_bytes`."""
    return (_field("schema", schema) + _field("work_name", _text(work_name, "work_name"))
            + _field("work_version", _text(work_version, "work_version")))


@functools.lru_cache(maxsize=512)
def _shared_policy(schema: str, provider_safety: str, policy: ExecutionPolicy | None) -> bytes:
    """The fields of :func:`canonical_bytes` between the payload and the deadline:
    provider_safety, and for v2 the retry and plan fields (the policies are immutable)."""
    out = _field("provider_safety", _text(provider_safety, "provider_safety"))
    if schema != SCHEMA_V2:
        return out
    return out + b"".join(_policy_fields(policy))


def _policy_fields(policy: ExecutionPolicy | None) -> list[bytes]:
    """The v2 retry and plan fields of :func:`canonical_bytes`, in their order (one list for the
    reference encoding and the cached one, so the two can never name or order them apart)."""
    retry = None if policy is None else policy.retry
    plan = None if policy is None else policy.plan
    return [
        _field("retry.maximum_attempts", retry and retry.maximum_attempts),
        _field("retry.maximum_elapsed_us", retry and retry.maximum_elapsed),
        _field("retry.initial_retry_delay_us", retry and retry.initial_retry_delay),
        _field("retry.maximum_retry_delay_us", retry and retry.maximum_retry_delay),
        _field("retry.lease_duration_us", retry and retry.lease_duration),
        _field("retry.renewal_cadence_us", retry and retry.renewal_cadence),
        _field("retry.maximum_lease_lifetime_us", retry and retry.maximum_lease_lifetime),
        _field("retry.backoff_algorithm", retry and retry.backoff_algorithm),
        _field("plan.version", plan and plan.version),
        _field("plan.offset_count", plan and len(plan.offsets)),
        _field("plan.offsets_us", plan and b"".join(_frame(_encode(o)) for o in plan.offsets)),
        _field("plan.circuit_us", plan and plan.circuit),
    ]
