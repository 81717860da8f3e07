"""Reading Work: ``work.get`` and ``work.list`` (issue 3, item 6; docs/protocol/work.md "Authorized
Work List").

Each call runs one Work query in a scoped block (whatever the page size): the statement's MVCC
snapshot projects the stored facts, and the execution snapshot is computed from that one row by
the pure policy functions. These reads take no Work, dispatch or permit lock and consult no
clock, so the snapshot is descriptive and can be stale; it never grants a claim, permit, retry
or completion -- the runtime rechecks everything under the Work lock.

``execution`` is None for legacy Work (no execution policy, no deadline: fingerprint v1).
``next_eligibility_at`` is the next *unconsumed* planned slot, including while the current
attempt is claimed or running, and None after the final slot was claimed (and always None for
Work without a plan); ``due_at`` still names the slot the current attempt consumed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import DurableError, InvalidArgument, WorkNotFound
from durable_schedule.evaluation.fingerprint import SCHEMA_V1
from durable_schedule.evaluation.policy import (
    AttemptPlan,
    ExecutionPolicy,
    RetryPolicy,
    admission_cutoff,
    closure_reason,
    next_eligibility,
)
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import scoped
from durable_schedule.work import codec
from durable_schedule.work.rows import STATES

_QUERIES = "work_queries.sql"
MAX_PAGE_SIZE = 500


@dataclass(frozen=True)
class ExecutionSnapshot:
    """Accepted timing facts of opt-in Work, and what they imply (descriptive only)."""

    policy: ExecutionPolicy
    deadline: datetime | None
    admission_cutoff: datetime
    cutoff_reason: str
    next_eligibility_at: datetime | None
    current_slot: int | None
    admission_closed_at: datetime | None
    admission_closed_reason: str | None
    deadline_reached_at: datetime | None


@dataclass(frozen=True)
class WorkInfo:
    """One Work as stored, with its execution snapshot."""

    work_id: uuid.UUID
    scope: str
    command_id: str
    idempotency_key: str
    work_name: str
    work_version: str
    payload: Any
    provider_safety: str
    fingerprint_schema: str
    fingerprint_digest: str
    accepted_at: datetime
    due_at: datetime
    deadline: datetime | None
    state: str
    attempt: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    attempt_started_at: datetime | None
    result: Any
    last_error: Any
    suspension_reason: str | None
    source_occurrence_id: int | None
    finished_at: datetime | None
    updated_at: datetime
    execution: ExecutionSnapshot | None


def _info(row: tuple) -> WorkInfo:
    (work_id, scope, command_id, key, name, version, payload, safety, schema, digest, retry,
     plan, deadline, accepted_at, due_at, state, attempt, lease_owner, lease_expires_at,
     started, result, last_error, suspension, closed_at, closed_reason, reached_at,
     occurrence, finished_at, updated_at) = row
    execution = None
    policy = None
    if schema != SCHEMA_V1:
        try:
            plan_json = codec.loads(plan)
            policy = ExecutionPolicy(
                retry=RetryPolicy.from_json(codec.loads(retry)),
                plan=None if plan_json is None else AttemptPlan.from_json(plan_json),
            )
        except DurableError:
            # A stored policy snapshot that cannot be read (changed by SQL): the runtime
            # suspends such Work (``unevaluable_policy``); inspection still shows the row,
            # without a timing projection, so one tampered row never hides a whole page.
            policy = None
    if policy is not None:
        current = attempt - 1 if policy.plan is not None and attempt >= 1 else None
        execution = ExecutionSnapshot(
            policy=policy,
            deadline=deadline,
            admission_cutoff=admission_cutoff(accepted_at, policy, deadline),
            cutoff_reason=closure_reason(accepted_at, policy, deadline),
            next_eligibility_at=next_eligibility(accepted_at, policy, attempt),
            current_slot=current,
            admission_closed_at=closed_at,
            admission_closed_reason=closed_reason,
            deadline_reached_at=reached_at,
        )
    return WorkInfo(
        work_id=work_id, scope=scope, command_id=command_id, idempotency_key=key,
        work_name=name, work_version=version, payload=codec.loads(payload),
        provider_safety=safety, fingerprint_schema=schema, fingerprint_digest=digest,
        accepted_at=accepted_at, due_at=due_at, deadline=deadline, state=state,
        attempt=attempt, lease_owner=lease_owner, lease_expires_at=lease_expires_at,
        attempt_started_at=started, result=codec.loads(result),
        last_error=codec.loads(last_error), suspension_reason=suspension,
        source_occurrence_id=occurrence, finished_at=finished_at, updated_at=updated_at,
        execution=execution,
    )


def _uuid(value: object, field: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidArgument(f"{field} must be a UUID", got=value) from None


@scope_optional
def get(scope: str, work_id: uuid.UUID | str, *, using: str | None = None) -> WorkInfo:
    """One Work of ``scope``; WorkNotFound (DS210) when the scope has no such Work."""
    wid = _uuid(work_id, "work_id")
    with scoped(scope, using=using, create=False) as cur:
        cur.execute(query(_QUERIES, "get"), {"scope_id": scope, "work_id": wid})
        row = cur.fetchone()
    if row is None:
        raise WorkNotFound("no such Work in this scope", scope=scope, work_id=str(wid))
    return _info(row)


@scope_optional
def list_work(scope: str, state: str | None = None, page_size: int = 50,
              after: uuid.UUID | str | None = None, *,
              using: str | None = None) -> list[WorkInfo]:
    """A page of ``scope``'s Work in acceptance order. Pass the last item's ``work_id`` as
    ``after`` for the next page (an ``after`` that names no Work of the scope gives an empty
    page). ``state`` filters on one state."""
    if state is not None and state not in STATES:
        raise InvalidArgument(f"state must be one of {STATES}", got=state)
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not (
            1 <= page_size <= MAX_PAGE_SIZE):
        raise InvalidArgument(f"page_size must be an int between 1 and {MAX_PAGE_SIZE}",
                              got=page_size)
    after_id = None if after is None else _uuid(after, "after")
    with scoped(scope, using=using, create=False) as cur:
        cur.execute(query(_QUERIES, "list"), {
            "scope_id": scope, "state": state, "after": after_id, "page_size": page_size})
        rows = cur.fetchall()
    return [_info(row) for row in rows]
