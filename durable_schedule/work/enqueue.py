"""Accepting Work inside the caller's transaction (issue 3, item 2; docs/protocol/work.md).

``enqueue(scope, request)`` runs inside the caller's ``transaction.atomic()`` when there is one:
the Work exists only if the caller commits. It enters the runtime role and the caller's scope
through :func:`durable_schedule.store.transactions.scoped` (a savepoint), and leaves role and
scope as it found them, so the caller's next ORM query runs exactly as before.

``accept_in_scope(cur, scope_id, request)`` is the one writer of new Work. It is also the
Schedule bridge's entry point, with a cursor already inside a scoped runtime transaction. One
statement inserts the Work row, its dispatch row (due at the Work's due time) and an
``accepted`` history row, with ``ON CONFLICT DO NOTHING``; on a conflict it reads the stored
row back and compares (compare-or-return, never a blind second write):

* same scope, command and idempotency key and the same fingerprint: the original Work is
  returned (``created=False``), whatever its state, even after it finished or expired;
* any other difference (payload, policy, plan, due time, deadline, a different explicit
  work id, or a work id taken by another identity): ``IdempotencyConflict`` (DS207).

``accepted_at`` is ``durable_schedule_clock('clock')`` (``clock_timestamp()``) sampled by that
statement: insertion time, not request creation or commit (docs/protocol/work.md), and it is never
hashed.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import (
    IdempotencyConflict,
    InvalidArgument,
    InvalidIdentifier,
    PlannedWorkWithDueTime,
    WrongRole,
)
from durable_schedule.evaluation.fingerprint import Fingerprint, fingerprint
from durable_schedule.evaluation.policy import (
    ExecutionPolicy,
    RetryPolicy,
    as_instant,
    deadline_instant,
)
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import scoped
from durable_schedule.work import codec
from durable_schedule.work.safety import provider_safety

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_QUERIES = "work_queries.sql"

#: The retry policy stored for legacy Work (no execution policy, no deadline). Legacy requests
#: keep the v1 fingerprint, which does not hash retry settings, so this snapshot is the same for
#: every legacy request; changing these defaults affects future Work only.
LEGACY_RETRY = RetryPolicy()


def identifier(value: object, field: str) -> str:
    """1-200 characters, no control characters, no surrounding spaces (DS115)."""
    if not isinstance(value, str):
        raise InvalidIdentifier(f"{field} must be a string", got=type(value).__name__)
    if not value or len(value) > 200 or value != value.strip() or _CONTROL.search(value):
        raise InvalidIdentifier(
            f"{field} must be 1-200 characters without control characters or surrounding spaces",
            value=value,
        )
    return value


@dataclass(frozen=True)
class WorkRequest:
    """One enqueue request: identity, encoded payload and the immutable timing facts.

    ``payload`` is the codec's JSON value (a definition encodes before building the request).
    ``policy=None`` and ``deadline=None`` make a legacy request (fingerprint v1, default retry
    policy); anything else opts in (fingerprint v2). A planned policy starts at the acceptance
    instant, so it cannot also take ``due_at`` (DS208). Validation happens here, before any
    database write.
    """

    command_id: str
    idempotency_key: str
    work_name: str
    work_version: str
    payload: Any
    provider_safety: str
    policy: ExecutionPolicy | None = None
    deadline: datetime | None = None
    due_at: datetime | None = None
    work_id: uuid.UUID | None = None

    def __post_init__(self) -> None:
        identifier(self.command_id, "command_id")
        identifier(self.idempotency_key, "idempotency_key")
        identifier(self.work_name, "work_name")
        identifier(self.work_version, "work_version")
        set_ = object.__setattr__
        set_(self, "payload", codec.json_value(self.payload, "payload"))
        set_(self, "provider_safety", provider_safety(self.provider_safety).value)
        if self.policy is not None and not isinstance(self.policy, ExecutionPolicy):
            raise InvalidArgument("policy must be an ExecutionPolicy or None",
                                  got=type(self.policy).__name__)
        set_(self, "deadline", deadline_instant(self.deadline))
        if self.due_at is not None:
            set_(self, "due_at", as_instant(self.due_at, "due_at", InvalidArgument))
        if self.policy is not None and self.policy.plan is not None and self.due_at is not None:
            raise PlannedWorkWithDueTime("a planned request cannot also provide due_at")
        if self.work_id is not None and not isinstance(self.work_id, uuid.UUID):
            raise InvalidArgument("work_id must be a uuid.UUID or None",
                                  got=type(self.work_id).__name__)

    @property
    def is_legacy(self) -> bool:
        return self.policy is None and self.deadline is None

    @property
    def fingerprint(self) -> Fingerprint:
        """v1 for legacy requests, v2 otherwise; the acceptance instant is never hashed."""
        return fingerprint(
            work_name=self.work_name,
            work_version=self.work_version,
            payload_bytes=codec.canonical_bytes(self.payload),
            provider_safety=self.provider_safety,
            policy=self.policy,
            deadline=self.deadline,
            due_at=self.due_at,
        )

    @property
    def retry(self) -> RetryPolicy:
        return LEGACY_RETRY if self.policy is None else self.policy.retry


@dataclass(frozen=True)
class AcceptedWork:
    """The accepted Work: its identity, current state and acceptance instant."""

    work_id: uuid.UUID
    command_id: str
    idempotency_key: str
    state: str
    accepted_at: datetime
    created: bool


def accept_in_scope(
    cur, scope_id: str, request: WorkRequest, *, source_occurrence_id: int | None = None
) -> AcceptedWork:
    """Insert the Work (or return the identical original) through a cursor that is already
    inside a scoped runtime transaction for ``scope_id``. See the module docstring."""
    if not isinstance(request, WorkRequest):
        raise InvalidArgument("request must be a WorkRequest", got=type(request).__name__)
    if source_occurrence_id is not None and (
        isinstance(source_occurrence_id, bool) or not isinstance(source_occurrence_id, int)
    ):
        raise InvalidArgument("source_occurrence_id must be an int or None")
    fp = request.fingerprint
    work_id = request.work_id or uuid.uuid4()
    plan = None if request.policy is None or request.policy.plan is None else request.policy.plan
    detail = {
        "command_id": request.command_id,
        "idempotency_key": request.idempotency_key,
        "work_name": request.work_name,
        "work_version": request.work_version,
        "fingerprint_schema": fp.schema,
        "source_occurrence_id": source_occurrence_id,
    }
    cur.execute(query(_QUERIES, "accept"), {
        "scope_id": scope_id,
        "work_id": work_id,
        "command_id": request.command_id,
        "idempotency_key": request.idempotency_key,
        "work_name": request.work_name,
        "work_version": request.work_version,
        "payload": codec.canonical_json(request.payload),
        "provider_safety": request.provider_safety,
        "fingerprint_schema": fp.schema,
        "fingerprint_digest": fp.digest,
        "retry_policy": codec.canonical_json(request.retry.to_json(), "retry_policy"),
        "attempt_plan": None if plan is None else codec.canonical_json(plan.to_json()),
        "execution_deadline": request.deadline,
        "due_at": request.due_at,
        "source_occurrence_id": source_occurrence_id,
        "detail": codec.canonical_json(detail, "detail"),
    })
    proven, new_id, state, accepted_at = cur.fetchone()
    if not proven:
        raise WrongRole("accept_in_scope needs a cursor inside a scoped runtime transaction "
                        "for this scope", scope=scope_id)
    if new_id is not None:
        return AcceptedWork(new_id, request.command_id, request.idempotency_key, state,
                            accepted_at, True)
    return _compare_or_return(cur, scope_id, request, fp, work_id)


def _compare_or_return(cur, scope_id, request, fp, work_id) -> AcceptedWork:
    cur.execute(query(_QUERIES, "accepted_identity"), {
        "scope_id": scope_id,
        "command_id": request.command_id,
        "idempotency_key": request.idempotency_key,
        "work_id": work_id,
    })
    rows = cur.fetchall()
    same_key = [r for r in rows if (r[1], r[2]) == (request.command_id, request.idempotency_key)]
    if not same_key:
        # The work id is taken by another command / idempotency key in this scope.
        raise IdempotencyConflict("the work id is already used by another command",
                                  scope=scope_id, work_id=str(work_id))
    stored_id, command_id, key, schema, digest, state, accepted_at = same_key[0]
    if (schema, digest) != (fp.schema, fp.digest):
        raise IdempotencyConflict(
            "the same command and idempotency key were accepted with different facts",
            scope=scope_id, command_id=command_id, idempotency_key=key,
            stored_schema=schema, request_schema=fp.schema,
        )
    if request.work_id is not None and request.work_id != stored_id:
        raise IdempotencyConflict("the same command was accepted under another work id",
                                  scope=scope_id, command_id=command_id,
                                  stored_work_id=str(stored_id))
    return AcceptedWork(stored_id, command_id, key, state, accepted_at, False)


@scope_optional
def enqueue(scope: str, request: WorkRequest, *, using: str | None = None) -> AcceptedWork:
    """Accept ``request`` in ``scope`` inside the caller's transaction (or its own)."""
    if not isinstance(request, WorkRequest):
        raise InvalidArgument("request must be a WorkRequest", got=type(request).__name__)
    with scoped(scope, using=using) as cur:
        return accept_in_scope(cur, scope, request)
