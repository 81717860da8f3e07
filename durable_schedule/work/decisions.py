"""What the runtime does with a locked Work row (issue 3, item 4; docs/protocol/work.md "Validation
and timing").

Each function runs inside a scoped transaction that holds the Work row lock and a database
``now`` read after the lock (``row.now``); it decides with the pure functions of
:mod:`durable_schedule.evaluation.policy` and writes through the one guarded
:func:`~durable_schedule.work.rows.transition`. The rules, in docs/protocol/work.md's words:

* admit a new attempt when ``due_at <= now < admission cutoff``; a refusal consumes no slot;
* a planned Work's next slot is ``A + O[attempt]``; an overdue one is due at once, so fast
  failures consume overdue slots in a burst; there is no slot at or after the cutoff;
* the deadline closes claim, permit, invocation, retry release and ordinary success at or after
  D; first-closure facts are written once and never overwritten;
* an attempt whose outcome was never recorded (its lease expired) counts as an attempt. For
  ``idempotent`` Work it counts as failed and its permit stays unresolved (ambiguous: only a
  reconciliation or a proof establishes effect truth); ``reconcile_before_retry`` Work is
  reconciled before any further attempt.

``tally`` is a Counter the caller merges into the pass counts after the transaction commits.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from durable_schedule.errors import DurableError, UnknownWorkDefinition
from durable_schedule.evaluation.policy import (
    MAX_INSTANT,
    bounded_add,
    lease_expiry,
    next_retry_due,
)
from durable_schedule.work.failures import MESSAGE_LIMIT, exception_facts, safe_text
from durable_schedule.work.registry import WorkDefinition, lookup
from durable_schedule.work.rows import (
    FAILED,
    PENDING,
    RUNNING,
    SUSPENDED,
    TERMINAL_STATES,
    WorkRow,
    closing_state,
    drop_dispatch,
    dumps,
    reschedule_dispatch,
    transition,
)
from durable_schedule.work.safety import ProviderSafety

RECONCILE = ProviderSafety.RECONCILE_BEFORE_RETRY.value

#: Suspension reasons (docs/work.md "States").
UNKNOWN_DEFINITION = "unknown_definition"
RECONCILER_MISSING = "reconciler_missing"
RECONCILIATION_UNKNOWN = "reconciliation_unknown"
UNEVALUABLE_POLICY = "unevaluable_policy"


@dataclass(frozen=True)
class Invoke:
    """An admitted attempt: the permit is committed; the executor may be invoked."""

    routing_id: int
    row: WorkRow
    definition: WorkDefinition
    permit_no: int


@dataclass(frozen=True)
class Reconcile:
    """A reconciliation lease: the reconciler must judge ``permit_no`` before anything else."""

    routing_id: int
    row: WorkRow
    definition: WorkDefinition
    permit_no: int
    permit_attempt: int
    #: The database instant the reconciliation lease was taken: its renewals are capped by the
    #: maximum lease lifetime counted from here, for every permit judged under that lease.
    started_at: datetime


Action = Invoke | Reconcile | None


def error_detail(exc: BaseException | None = None, *, code: str = "DS216", message: str = "",
                 **extra: Any) -> dict[str, Any]:
    """A ``last_error`` value: diagnostic code and message; for an exception also its type
    name, class path and bounded traceback (:mod:`.failures`)."""
    if exc is not None:
        # Only our own errors name a diagnostic code; a user exception's ``code`` attribute
        # (an HTTP status, an errno) is not one.
        own = isinstance(exc, DurableError)
        code = exc.code if own else code
        message = exc
    # safe_text: a message jsonb cannot store would fail the very transaction recording it.
    out: dict[str, Any] = {"code": code, "message": safe_text(message)[:MESSAGE_LIMIT]}
    if exc is not None:
        out.update(exception_facts(exc))
    out.update(extra)
    return out


def suspend(cur, row: WorkRow, actor: str, *, reason: str, error: dict | None,
            tally: Counter) -> WorkRow:
    """Suspend: the Work keeps its state of facts, needs an operator, and leaves the queue."""
    tally["suspended"] += 1
    return transition(
        cur, row, event="suspended", actor=actor, detail={"reason": reason},
        state=SUSPENDED, suspension_reason=reason,
        last_error=dumps(error) if error is not None else row.last_error,
        lease_owner=None, lease_expires_at=None, dispatch="delete",
    )


def after_failure(cur, row: WorkRow, actor: str, *, error: dict, tally: Counter,
                  cause: str, resolve: tuple[int, str, str] | None = None,
                  detail: dict[str, Any] | None = None, **changes: Any) -> WorkRow:
    """Attempt ``row.attempt`` failed (or was lost without effect): schedule the next attempt
    (next planned slot, or legacy backoff from now) or close admission for good."""
    failed = row.attempt
    if failed < 1:
        # The attempt that failed or was lost is counted, so the counter is at least 1; only
        # a hand-edited row (``running`` with attempt 0: the store allows it) has less. The
        # counter is repaired to the attempt of the unresolved permit (at least 1), said in the
        # history row, instead of a DS406 out of every pass that claims the row.
        failed = max(row.open_permit_attempt or 0, 1)
        detail = {**(detail or {}), "attempt_repaired": {"from": row.attempt, "to": failed}}
        changes["attempt"] = failed
    reason = row.closed_reason
    due = None
    if reason is None:
        due, reason = next_retry_due(policy=row.policy, accepted_at=row.accepted_at,
                                     failed_attempt=failed, now=row.now,
                                     deadline=row.execution_deadline)
    common = dict(actor=actor, resolve=resolve, lease_owner=None, lease_expires_at=None,
                  last_error=dumps(error), **changes)
    # The history row of each failed attempt keeps its own error (work.attempts() reads it);
    # last_error keeps only the latest.
    detail = {**(detail or {}), "error": error}
    if due is not None:
        tally["retried"] += 1
        return transition(cur, row, event="retry_scheduled",
                          detail={"cause": cause, "next_due_at": due, **(detail or {})},
                          state=PENDING, due_at=due, dispatch="upsert", dispatch_due_at=due,
                          **common)
    state = closing_state(reason)
    tally[state] += 1
    return transition(cur, row, event=state,
                      detail={"cause": cause, "reason": reason, **(detail or {})},
                      close=reason, state=state, finished_at=row.now, dispatch="delete",
                      **common)


def decide(cur, routing_id: int, row: WorkRow, owner: str, tally: Counter,
           collect: list | None = None) -> Action:
    """A claimed row, locked, whose claim (dispatch revision and owner) was verified.
    ``collect``: see :func:`admit_pending`."""
    if row.state in TERMINAL_STATES or row.state == SUSPENDED:
        drop_dispatch(cur, row)  # nothing to run: such Work keeps no dispatch row
        tally["skipped"] += 1
        return None
    try:
        row.policy  # noqa: B018 -- parse the stored policy once; a tampered one cannot run
    except DurableError as exc:
        suspend(cur, row, owner, reason=UNEVALUABLE_POLICY, error=error_detail(exc),
                tally=tally)
        return None
    if row.state == RUNNING:
        # A running row without any lease (only a hand-edited one: the store allows the NULL
        # pair) has no live lease to wait for: it is recovered, as work.cancel counts it lapsed.
        if row.lease_expires_at is not None and row.lease_expires_at > row.now:
            # Another worker's lease is live: the row is due again when that lease ends.
            reschedule_dispatch(cur, row, row.lease_expires_at, row.lease_owner,
                                row.lease_expires_at)
            tally["busy"] += 1
            return None
        return recover(cur, routing_id, row, owner, tally, collect)
    return admit_pending(cur, routing_id, row, owner, tally, collect)


def recover(cur, routing_id: int, row: WorkRow, owner: str, tally: Counter,
            collect: list | None = None) -> Action:
    """A running Work whose lease expired: its holder crashed or lost the lease."""
    tally["recovered"] += 1
    if row.provider_safety == RECONCILE and row.open_permit_no is not None:
        return start_reconciliation(cur, routing_id, row, owner, tally, cause="lease_expired")
    row = after_failure(cur, row, owner, tally=tally, cause="lease_expired",
                        error=error_detail(code="lease_expired",
                                           message="the attempt's lease expired without an "
                                                   "outcome", lease_owner=row.lease_owner))
    if row.state == PENDING and row.due_at <= row.now:
        return admit_pending(cur, routing_id, row, owner, tally, collect)
    return None


def admit_pending(cur, routing_id: int, row: WorkRow, owner: str, tally: Counter,
                  collect: list | None = None) -> Action:
    """Admission of a pending Work: refuse (closed or not due), suspend, reconcile or admit.
    With ``collect``, an admission is appended there (``(routing_id, row, definition,
    lease_expires_at)``) for the caller to write in one batch statement, and None returned."""
    if row.provider_safety == RECONCILE and row.open_permit_no is not None:
        # An unresolved admitted permit (a Work resumed after a missing definition or
        # reconciler) is judged before anything else, also once admission has closed or the
        # attempts ran out: reconciliation establishes what happened and reopens nothing, as
        # it does for Work recovered from ``running`` (docs/work.md "Provider safety").
        return start_reconciliation(cur, routing_id, row, owner, tally, cause="unresolved_permit")
    reason = row.admission_closed()
    if reason is not None:
        # Refusal before any permit or invocation: no slot consumed (docs/protocol/work.md).
        state = closing_state(reason)
        tally["refused"] += 1
        tally[state] += 1
        transition(cur, row, event=state, actor=owner,
                   detail={"cause": "admission_refused", "reason": reason}, close=reason,
                   state=state, finished_at=row.now, dispatch="delete")
        return None
    exhausted = row.attempts_exhausted()
    if exhausted is not None:
        # The attempt counter already reached the policy's maximum (only a tampered or
        # hand-edited row gets here: every failure path closes admission at the last attempt).
        # Admission is refused for good, before any permit or invocation.
        tally["refused"] += 1
        tally[FAILED] += 1
        transition(cur, row, event=FAILED, actor=owner,
                   detail={"cause": "admission_refused", "reason": exhausted,
                           "attempt": row.attempt,
                           "maximum_attempts": row.policy.retry.maximum_attempts},
                   close=exhausted, state=FAILED, finished_at=row.now, dispatch="delete",
                   last_error=dumps(error_detail(
                       code="DS223", message=f"attempt counter {row.attempt} reached the "
                       f"policy's maximum of {row.policy.retry.maximum_attempts}; not admitted",
                       reason=exhausted)))
        return None
    if row.due_at > row.now:
        reschedule_dispatch(cur, row, row.due_at)  # no early execution
        tally["not_due"] += 1
        return None
    definition = lookup(row.work_name, row.work_version)
    if definition is None or definition.executor_fn is None:
        suspend(cur, row, owner, reason=UNKNOWN_DEFINITION, tally=tally, error=error_detail(
            UnknownWorkDefinition("no executor is registered for this Work name and version "
                                  "in the worker process", work_name=row.work_name,
                                  work_version=row.work_version)))
        return None
    retry = row.policy.retry
    expires = lease_expiry(row.now, retry.lease_duration, row.now,
                           retry.maximum_lease_lifetime, row.execution_deadline)
    if collect is not None:
        # Batched admission (work/pipeline.py): the same decision, written for the whole batch
        # in one statement (rows.admit_many) by the caller, in this transaction.
        collect.append((routing_id, row, definition, expires))
        tally["admitted"] += 1
        return None
    admitted = transition(
        cur, row, event="admitted", actor=owner,
        detail={"permit_no": row.last_permit_no + 1, "slot_due_at": row.due_at,
                "lease_expires_at": expires},
        new_permit=True, state=RUNNING, attempt=row.attempt + 1, lease_owner=owner,
        lease_expires_at=expires, lease_generation=row.lease_generation + 1,
        attempt_started_at=row.now, dispatch="upsert", dispatch_due_at=expires,
        dispatch_owner=owner, dispatch_expires_at=expires,
    )
    tally["admitted"] += 1
    return Invoke(routing_id, admitted, definition, admitted.last_permit_no)


def start_reconciliation(cur, routing_id: int, row: WorkRow, owner: str, tally: Counter, *,
                         cause: str) -> Action:
    """Take a reconciliation lease for the most recent unresolved admitted permit.

    Reconciliation may run after the admission cutoff (docs/protocol/work.md): it judges a past
    effect and never admits anything by itself, so its lease is not capped by the deadline; its
    renewals are capped by the maximum lease lifetime counted from this start (runtime._renew).
    """
    definition = lookup(row.work_name, row.work_version)
    if definition is None:
        suspend(cur, row, owner, reason=UNKNOWN_DEFINITION, tally=tally, error=error_detail(
            UnknownWorkDefinition("the Work must be reconciled but its definition is not "
                                  "registered in the worker process", work_name=row.work_name,
                                  work_version=row.work_version)))
        return None
    if definition.reconciler_fn is None:
        suspend(cur, row, owner, reason=RECONCILER_MISSING, tally=tally, error=error_detail(
            code="DS201", message="reconcile_before_retry Work has no reconciler registered"))
        return None
    expires = bounded_add(row.now, row.policy.retry.lease_duration, MAX_INSTANT)
    leased = transition(
        cur, row, event="reconciling", actor=owner,
        detail={"cause": cause, "permit_no": row.open_permit_no,
                "permit_attempt": row.open_permit_attempt},
        state=RUNNING, lease_owner=owner, lease_expires_at=expires,
        lease_generation=row.lease_generation + 1, dispatch="upsert", dispatch_due_at=expires,
        dispatch_owner=owner, dispatch_expires_at=expires,
    )
    return Reconcile(routing_id, leased, definition, row.open_permit_no, row.open_permit_attempt,
                     row.now)
