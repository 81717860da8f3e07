"""The locked Work row and its one guarded transition statement (issue 3, item 4).

Every change of a Work's runtime state goes through :func:`transition`: one statement that
updates the Work row only when its state, lease owner and lease generation are still the ones
this process read under the row lock, and applies the side effects of that change in the same
statement (new or resolved permit, dispatch row moved or deleted, quarantined evidence, a
history row). A zero row count raises :class:`LeaseConflict`, a typed outcome the caller turns
into "lost" -- never ignored (docs/protocol/conventions.md rule C5, docs/protocol/storage.md "Every
state change ... names its lease").

Locking reads the Work row ``FOR UPDATE`` together with its permit facts, its dispatch row and
the clock, sampled after the lock: the post-lock decision is the linearization point (spec
001). The facts must come from a snapshot that already includes whatever the lock waited for:
the claim path therefore never waits (``SKIP LOCKED``), the leased path can only have waited for
its own lease holder, and operator commands read the facts in a second statement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from durable_schedule.evaluation.policy import (
    REASON_ATTEMPTS_EXHAUSTED,
    REASON_PLAN_EXHAUSTED,
    AttemptPlan,
    ExecutionPolicy,
    RetryPolicy,
    admission_cutoff,
    closure_reason,
)
from durable_schedule.store.arrays import BinaryArray
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import routed, runtime_transaction
from durable_schedule.work import codec

_QUERIES = "work_queries.sql"

PENDING, RUNNING, SUSPENDED = "pending", "running", "suspended"
SUCCEEDED, FAILED, EXPIRED, CANCELED = "succeeded", "failed", "expired", "canceled"
TERMINAL_STATES = frozenset({SUCCEEDED, FAILED, EXPIRED, CANCELED})
NONTERMINAL_STATES = frozenset({PENDING, RUNNING, SUSPENDED})
STATES = (PENDING, RUNNING, SUSPENDED, SUCCEEDED, FAILED, EXPIRED, CANCELED)

#: Closure reasons that mean "the attempts ran out" (state failed); the time bounds (deadline,
#: circuit_open, max_elapsed) mean "the window closed" (state expired).
EXHAUSTION_REASONS = frozenset({REASON_PLAN_EXHAUSTED, REASON_ATTEMPTS_EXHAUSTED})


class LeaseConflict(Exception):
    """The guarded statement changed no row: the lease or state moved on (typed outcome)."""


@dataclass(frozen=True)
class WorkRow:
    id: int
    scope_id: str
    work_id: Any
    command_id: str
    idempotency_key: str
    work_name: str
    work_version: str
    payload: Any
    provider_safety: str
    fingerprint_schema: str
    retry_policy: Any
    attempt_plan: Any
    execution_deadline: datetime | None
    accepted_at: datetime
    due_at: datetime
    state: str
    attempt: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_generation: int
    attempt_started_at: datetime | None
    result: str | None  # jsonb text, passed through unchanged unless a transition sets it
    last_error: str | None
    suspension_reason: str | None
    closed_at: datetime | None
    closed_reason: str | None
    deadline_reached_at: datetime | None
    finished_at: datetime | None
    source_occurrence_id: int | None
    # Read after the lock.
    open_permit_no: int | None = None
    open_permit_attempt: int | None = None
    open_permits: int = 0
    last_permit_no: int = 0
    dispatch_revision: int | None = None
    dispatch_owner: str | None = None
    now: datetime | None = None

    @cached_property
    def policy(self) -> ExecutionPolicy:
        """The stored retry policy and plan (raises a DS203/DS204 error when tampered)."""
        retry, plan = self.retry_policy, self.attempt_plan
        if isinstance(retry, str) and (plan is None or isinstance(plan, str)):
            return _policy_of_text(retry, plan)
        return _policy_of(retry, plan)

    @property
    def cutoff(self) -> datetime:
        return admission_cutoff(self.accepted_at, self.policy, self.execution_deadline)

    @property
    def cutoff_reason(self) -> str:
        return closure_reason(self.accepted_at, self.policy, self.execution_deadline)

    def admission_closed(self) -> str | None:
        """The reason admission is closed at ``now`` (first recorded cause wins), or None."""
        if self.closed_reason is not None:
            return self.closed_reason
        if self.now >= self.cutoff:
            return self.cutoff_reason
        return None

    def attempts_exhausted(self) -> str | None:
        """The closure reason when the attempt counter has reached the policy's maximum
        (no further attempt may be admitted), else None. One rule for every admission path."""
        if self.attempt < self.policy.retry.maximum_attempts:
            return None
        return REASON_PLAN_EXHAUSTED if self.policy.plan is not None else (
            REASON_ATTEMPTS_EXHAUSTED)

    def deadline_reached(self) -> bool:
        d = self.execution_deadline
        return d is not None and self.now >= d


def _policy_of(retry_json: Any, plan_json: Any) -> ExecutionPolicy:
    retry = RetryPolicy.from_json(codec.loads(retry_json))
    plan = codec.loads(plan_json)
    return ExecutionPolicy(retry=retry, plan=None if plan is None else AttemptPlan.from_json(plan))


@lru_cache(maxsize=256)
def _policy_of_text(retry_text: str, plan_text: str | None) -> ExecutionPolicy:
    """:func:`_policy_of` for the stored jsonb texts, cached: a batch of Work accepted from the
    same definition stores the same policy text, and each row is locked twice per attempt
    (admission, outcome), so parsing and validating it per lock was a tenth of the Work
    pipeline's Python time (docs/benchmarks.md). The policies are frozen dataclasses, safe to
    share; a text that does not parse raises every time (lru_cache keeps no exception)."""
    return _policy_of(retry_text, plan_text)


_FIELDS = [f.name for f in fields(WorkRow)]
_FIELD_SET = frozenset(_FIELDS)
#: The Work columns every lock query selects first, in the order of the WorkRow fields.
_WORK_COLUMNS = _FIELDS[: _FIELDS.index("source_occurrence_id") + 1]
#: The facts read after the lock, in the order of the lock queries' trailing columns and of the
#: ``facts`` query (:func:`_parse` names them by these fields).
_FACT_FIELDS = ("open_permit_no", "open_permit_attempt", "open_permits", "last_permit_no",
                "dispatch_revision", "dispatch_owner", "now")
if tuple(_FIELDS[len(_WORK_COLUMNS):]) != _FACT_FIELDS:  # pragma: no cover - a WorkRow edit
    raise RuntimeError("WorkRow's fields after source_occurrence_id must be the lock facts")
_ID, _SCOPE_ID, _WORK_ID = (_WORK_COLUMNS.index(n) for n in ("id", "scope_id", "work_id"))


def _load(cur, name: str, params: dict[str, Any]) -> WorkRow | None:
    """Run a lock query; the facts come inline (claimed, leased) or from a second statement."""
    cur.execute(query(_QUERIES, name), params)
    head = cur.fetchone()
    if head is None:
        return None
    return _parse(cur, head)


def _load_many(cur, name: str, params: dict[str, Any]) -> dict[int, WorkRow]:
    """Run a batch lock query (facts inline); ``{internal id: row}`` for the rows it locked."""
    cur.execute(query(_QUERIES, name), params)
    return {row.id: row for row in (_parse(cur, head) for head in cur.fetchall())}


def _parse(cur, head: tuple) -> WorkRow:
    """The WorkRow of one locked row: the Work columns, then the facts (inline, or read by a
    second statement). Built as :func:`_evolve` builds its copies, by filling the frozen row's
    ``__dict__``: the dataclass ``__init__`` over 36 keyword arguments was the largest part of
    parsing a row (docs/benchmarks.md "Batched Work, client Python"). WorkRow has no
    ``__post_init__`` and every field is filled, so the row is the one ``__init__`` makes; a head
    of the wrong length is refused as ``zip(strict=True)`` and the unpacking refused it."""
    count = len(_WORK_COLUMNS)
    work, facts = head[:count], head[count:]
    if len(work) != count:
        raise ValueError(f"a Work row has {count} columns, got {len(work)}")
    if not facts:
        cur.execute(query(_QUERIES, "facts"), {
            "id": work[_ID], "scope_id": work[_SCOPE_ID], "work_id": work[_WORK_ID]})
        facts = cur.fetchone()
    if len(facts) != len(_FACT_FIELDS):
        raise ValueError(f"expected {len(_FACT_FIELDS)} facts, got {len(facts)}")
    row = object.__new__(WorkRow)
    values = row.__dict__
    values.update(zip(_WORK_COLUMNS, work, strict=True))
    values["payload"] = codec.loads(values["payload"])
    values.update(zip(_FACT_FIELDS, facts, strict=True))
    return row


def lock_claimed(cur, work_ref: int) -> WorkRow | None:
    """Lock a claimed Work by its internal id; None when it is gone or locked by another."""
    return _load(cur, "lock_claimed", {"id": work_ref})


def lock_leased(cur, work_ref: int, owner: str, generation: int) -> WorkRow | None:
    """Lock a running Work only while ``owner``/``generation`` still hold its lease."""
    return _load(cur, "lock_leased",
                 {"id": work_ref, "lease_owner": owner, "lease_generation": generation})


def lock_claimed_many(cur, work_refs: list[int]) -> dict[int, WorkRow]:
    """The batch form of :func:`lock_claimed` (one statement, id order, SKIP LOCKED)."""
    return _load_many(cur, "lock_claimed_many", {"ids": list(work_refs)})


def lock_leased_many(cur, leases: list[tuple[int, int]], owner: str) -> dict[int, WorkRow]:
    """The batch form of :func:`lock_leased`: ``leases`` is ``[(internal id, generation)]``;
    returns the rows whose lease ``owner`` still holds with that generation."""
    return _load_many(cur, "lock_leased_many", {
        "ids": [i for i, _ in leases], "generations": [g for _, g in leases],
        "lease_owner": owner})


def lock_by_work_id(cur, scope_id: str, work_id) -> WorkRow | None:
    """Lock a Work of the current scope by its public work id (operator commands)."""
    return _load(cur, "lock_by_work_id", {"scope_id": scope_id, "work_id": work_id})


def dumps(value: Any) -> str:
    """A history / error detail as JSON text (instants as ISO 8601 strings): what
    ``json.dumps(value, sort_keys=True, default=_json_default)`` gives, through one encoder made
    once (``json.dumps`` with options builds a new one per call; an encoder keeps no state
    between calls)."""
    return _DETAILS.encode(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


_DETAILS = json.JSONEncoder(sort_keys=True, default=_json_default)


# Columns a transition may set; anything not named keeps its current value.
_MUTABLE = ("state", "due_at", "attempt", "lease_owner", "lease_expires_at", "lease_generation",
            "attempt_started_at", "result", "last_error", "suspension_reason", "finished_at")


def transition(
    cur,
    row: WorkRow,
    *,
    event: str,
    actor: str,
    detail: dict[str, Any] | None = None,
    close: str | None = None,
    new_permit: bool = False,
    resolve: tuple[int, str, str] | None = None,
    dispatch: str = "keep",
    dispatch_due_at: datetime | None = None,
    dispatch_owner: str | None = None,
    dispatch_expires_at: datetime | None = None,
    quarantine: tuple[str, str | None] | None = None,
    **changes: Any,
) -> WorkRow:
    """Apply one guarded change to a locked row and return the row as it now is.

    ``close``: record the first-write admission closure (reason) at ``row.now``. ``resolve``:
    ``(permit_no, outcome, source)``. ``dispatch``: keep | upsert | delete. ``quarantine``:
    ``(reason, result_json)`` kept as evidence of the current attempt.
    """
    unknown = set(changes) - set(_MUTABLE)
    if unknown:
        raise TypeError(f"not a mutable Work column: {sorted(unknown)}")
    new = {name: changes.get(name, getattr(row, name)) for name in _MUTABLE}
    permit_no = row.last_permit_no + 1 if new_permit else None
    reached = row.now if row.deadline_reached() else None
    params = {
        **new,
        "id": row.id,
        "now": row.now,
        "expect_state": row.state,
        "expect_owner": row.lease_owner,
        "expect_generation": row.lease_generation,
        "closed_at": row.now if close else None,
        "closed_reason": close,
        "deadline_reached_at": reached,
        "new_permit_no": permit_no,
        "resolve_permit_no": resolve[0] if resolve else None,
        "permit_outcome": resolve[1] if resolve else None,
        "resolution_source": resolve[2] if resolve else None,
        "resolved_by": actor if resolve else None,
        "dispatch": dispatch,
        "dispatch_due_at": dispatch_due_at,
        "dispatch_owner": dispatch_owner,
        "dispatch_expires_at": dispatch_expires_at,
        "quarantine_reason": quarantine[0] if quarantine else None,
        "quarantine_result": quarantine[1] if quarantine else None,
        "quarantine_attempt": row.attempt,
        "event": event,
        "event_attempt": new["attempt"] or None,
        "actor": actor,
        "detail": dumps({"from": row.state, "to": new["state"], **(detail or {})}),
    }
    cur.execute(query(_QUERIES, "transition"), params)
    moved, permits_new, permits_resolved, _quarantined = cur.fetchone()
    if moved != 1:
        raise LeaseConflict(f"Work {row.work_id} moved on (expected {row.state}, "
                            f"lease generation {row.lease_generation})")
    if new_permit and permits_new != 1 or resolve and permits_resolved != 1:
        # The row lock makes this impossible unless the permit table was tampered with; the
        # exception rolls the whole transition back.
        raise LeaseConflict(f"Work {row.work_id}: permit bookkeeping did not match")
    open_permits = row.open_permits + (1 if new_permit else 0) - (1 if resolve else 0)
    open_no = permit_no if new_permit else (None if resolve else row.open_permit_no)
    return replace(
        row,
        **new,
        closed_at=row.closed_at or (row.now if close else None),
        closed_reason=row.closed_reason or close,
        deadline_reached_at=row.deadline_reached_at or reached,
        last_permit_no=permit_no or row.last_permit_no,
        open_permits=open_permits,
        open_permit_no=open_no,
        open_permit_attempt=new["attempt"] if new_permit else (
            None if resolve else row.open_permit_attempt),
    )


def admit_many(cur, items: list[tuple[WorkRow, datetime]], owner: str) -> list[WorkRow]:
    """The set form of the admitting :func:`transition` (pending -> running, new permit, new
    lease, dispatch row to the lease end, ``admitted`` history): one statement for ``items``
    (``(locked row, lease_expires_at)``), each guarded by its own expected state, owner and
    lease generation. Returns the rows as they now are, in order; a count that does not match
    raises :class:`LeaseConflict` (the caller's transaction rolls back)."""
    if not items:
        return []
    details = [dumps({"from": row.state, "to": RUNNING, "permit_no": row.last_permit_no + 1,
                      "slot_due_at": row.due_at, "lease_expires_at": expires})
               for row, expires in items]
    cur.execute(query(_QUERIES, "admit_many"), {
        "ids": [row.id for row, _ in items],
        "expect_states": BinaryArray(row.state for row, _ in items),
        "expect_owners": BinaryArray(row.lease_owner for row, _ in items),
        "expect_generations": [row.lease_generation for row, _ in items],
        "attempts": [row.attempt + 1 for row, _ in items],
        "expires": BinaryArray(expires for _, expires in items),
        "nows": BinaryArray(row.now for row, _ in items),
        "permits": [row.last_permit_no + 1 for row, _ in items],
        "details": BinaryArray(details),
        "lease_owner": owner,
    })
    moved, permits_new, dispatched = cur.fetchone()
    if moved != len(items) or permits_new != len(items) or dispatched != len(items):
        raise LeaseConflict(f"batch admission moved {moved} of {len(items)} rows "
                            f"({permits_new} permits, {dispatched} dispatch rows)")
    return [_evolve(row, state=RUNNING, attempt=row.attempt + 1, lease_owner=owner,
                    lease_expires_at=expires, lease_generation=row.lease_generation + 1,
                    attempt_started_at=row.now, last_permit_no=row.last_permit_no + 1,
                    open_permits=row.open_permits + 1, open_permit_no=row.last_permit_no + 1,
                    open_permit_attempt=row.attempt + 1)
            for row, expires in items]


def _evolve(row: WorkRow, **changes: Any) -> WorkRow:
    """``dataclasses.replace`` for the batch admission's hot path: a copy of the frozen row with
    ``changes`` (field names only, checked), without re-running ``__init__`` over all 36 fields
    (20 us per row in the profile, the largest Python item left per Work). The parsed policy
    (cached on the row) is carried over: it depends on the stored policy text only."""
    unknown = changes.keys() - _FIELD_SET
    if unknown:
        raise TypeError(f"not a WorkRow field: {sorted(unknown)}")
    new = object.__new__(WorkRow)
    new.__dict__.update(row.__dict__)
    new.__dict__.update(changes)
    return new


def reschedule_dispatch(cur, row: WorkRow, due_at: datetime, owner: str | None = None,
                        expires_at: datetime | None = None) -> None:
    """Under the Work lock: the dispatch row is due again at ``due_at`` (no Work change)."""
    cur.execute(query(_QUERIES, "dispatch_reschedule"), {
        "id": row.id, "due_at": due_at, "lease_owner": owner, "lease_expires_at": expires_at})


def drop_dispatch(cur, row: WorkRow) -> None:
    """Under the Work lock: remove the dispatch row of a Work that needs no worker."""
    cur.execute(query(_QUERIES, "dispatch_drop"), {"id": row.id})


def closing_state(reason: str) -> str:
    """``failed`` when the attempts ran out, ``expired`` when a time bound closed admission."""
    return FAILED if reason in EXHAUSTION_REASONS else EXPIRED


# ``store.transactions.routed`` and ``runtime_transaction`` restore the session role and clear
# the scope themselves when they run nested (a test's transaction), so the Work runtime uses
# them directly under its historical names.
def routed_block(routing_id: int, using: str | None = None):
    return routed(routing_id, using=using)


def runtime_block(using: str | None = None):
    return runtime_transaction(using=using)
