"""Operator commands on one Work: proof, resume, cancel (issue 3, item 5; docs/protocol/work.md).

``record_proof`` follows docs/protocol/work.md "Identity and outcome truth": under the Work lock it
selects the most recent unresolved admitted permit, independently of the current attempt, and
resolves only that permit. ``applied`` establishes the Work's result (``succeeded``);
``not_applied`` resolves the permit and -- when no other admitted effect remains uncertain -- hands
the Work back to its retry policy exactly as a reconciler's NotApplied would: the lost attempt
counts as failed, the next attempt is due at the next planned slot or backoff, and a closed
admission window stays closed (the Work then ends ``expired`` / ``failed``). If another unresolved
permit remains, the Work stays suspended and a new proof resolves the next one. Neither proof
extends the deadline or reopens admission; history records the actor, the permit and its attempt.

Proof is accepted only for ``suspended`` Work (ProofRefused, DS213, otherwise): a running or
pending Work is judged by its own reconciler, and a finished Work is never rewritten.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import (
    InvalidArgument,
    ProofRefused,
    WorkNotFound,
    WorkStateConflict,
)
from durable_schedule.store.transactions import scoped
from durable_schedule.work import codec
from durable_schedule.work.decisions import (
    RECONCILER_MISSING,
    UNKNOWN_DEFINITION,
    after_failure,
    error_detail,
)
from durable_schedule.work.enqueue import identifier
from durable_schedule.work.rows import (
    CANCELED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    WorkRow,
    lock_by_work_id,
    transition,
)

APPLIED, NOT_APPLIED = "applied", "not_applied"
#: Suspensions that ``resume`` may lift: the cause was the worker's deployment, not the effect.
RESUMABLE = frozenset({UNKNOWN_DEFINITION, RECONCILER_MISSING})


@dataclass(frozen=True)
class ProofRecorded:
    """The permit a proof resolved and where the Work stands afterwards."""

    work_id: uuid.UUID
    permit_no: int
    permit_attempt: int
    outcome: str
    state: str
    unresolved_permits: int


def _work_id(value: object) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidArgument("work_id must be a UUID", got=value) from None


def _locked(cur, scope: str, work_id: uuid.UUID) -> WorkRow:
    row = lock_by_work_id(cur, scope, work_id)
    if row is None:
        raise WorkNotFound("no such Work in this scope", scope=scope, work_id=str(work_id))
    return row


@scope_optional
def record_proof(scope: str, work_id: uuid.UUID | str, outcome: str, *, actor: str,
                 result: Any = None, expected_permit_no: int | None = None,
                 using: str | None = None) -> ProofRecorded:
    """Resolve the most recent unresolved admitted permit of a suspended Work.

    ``outcome`` is ``"applied"`` (``result`` becomes the Work's result) or ``"not_applied"``.
    ``expected_permit_no``, when given, must name the permit the proof resolves (the one the
    operator looked at); a different one raises ProofRefused and changes nothing. It is a
    permit number (an int >= 1): any other value (a bool, a float, a string) is refused with
    InvalidArgument (DS406) before the Work is read.
    """
    if outcome not in (APPLIED, NOT_APPLIED):
        raise InvalidArgument("outcome must be 'applied' or 'not_applied'", got=outcome)
    identifier(actor, "actor")
    wid = _work_id(work_id)
    if expected_permit_no is not None and (
            isinstance(expected_permit_no, bool) or not isinstance(expected_permit_no, int)
            or expected_permit_no < 1):
        # True == 1 and 1.0 == 1: without this check either was taken as permit 1.
        raise InvalidArgument("expected_permit_no must be None or an int >= 1",
                              got=f"{type(expected_permit_no).__name__} {expected_permit_no!r}"
                              [:200])
    if outcome == NOT_APPLIED and result is not None:
        raise InvalidArgument("a not_applied proof carries no result")
    result_json = codec.canonical_json(result, "result") if outcome == APPLIED else None
    with scoped(scope, using=using) as cur:
        row = _locked(cur, scope, wid)
        if row.state != SUSPENDED:
            raise ProofRefused("proof is recorded for suspended Work only", state=row.state,
                               work_id=str(wid))
        permit, attempt = row.open_permit_no, row.open_permit_attempt
        if permit is None:
            raise ProofRefused("the Work has no unresolved admitted permit", work_id=str(wid))
        if expected_permit_no is not None and expected_permit_no != permit:
            raise ProofRefused("the most recent unresolved permit is not the expected one",
                               expected=expected_permit_no, actual=permit)
        detail = {"permit_no": permit, "permit_attempt": attempt, "proof": outcome}
        resolve = (permit, outcome, "operator")
        if outcome == APPLIED:
            row = transition(cur, row, event="proof_applied", actor=actor, detail=detail,
                             resolve=resolve, state=SUCCEEDED, result=result_json,
                             suspension_reason=None, finished_at=row.now, dispatch="delete")
        elif row.open_permits > 1:
            row = transition(cur, row, event="proof_not_applied", actor=actor, detail=detail,
                             resolve=resolve)
        else:
            row = after_failure(cur, row, actor, tally=Counter(), cause="proof_not_applied",
                                resolve=resolve, detail=detail, suspension_reason=None,
                                error=error_detail(code="not_applied",
                                                   message=f"{actor} proved no effect"))
    return ProofRecorded(wid, permit, attempt, outcome, row.state, row.open_permits)


@scope_optional
def resume(scope: str, work_id: uuid.UUID | str, *, actor: str,
           using: str | None = None) -> str:
    """Lift an ``unknown_definition`` / ``reconciler_missing`` suspension after deploying the
    definition: the Work is pending again at its unchanged due time, and the next claim applies
    the admission rules as usual (a closed window stays closed). Returns the new state."""
    identifier(actor, "actor")
    wid = _work_id(work_id)
    with scoped(scope, using=using) as cur:
        row = _locked(cur, scope, wid)
        if row.state != SUSPENDED or row.suspension_reason not in RESUMABLE:
            raise WorkStateConflict("only Work suspended for a missing definition or "
                                    "reconciler can be resumed", state=row.state,
                                    reason=row.suspension_reason)
        row = transition(cur, row, event="resumed", actor=actor,
                         detail={"reason": row.suspension_reason}, state=PENDING,
                         suspension_reason=None, dispatch="upsert", dispatch_due_at=row.due_at)
    return row.state


@scope_optional
def cancel(scope: str, work_id: uuid.UUID | str, *, actor: str,
           using: str | None = None) -> str:
    """Cancel pending or suspended Work (terminal ``canceled``), or running Work whose lease has
    ended by the database clock (its holder crashed or stalled: no worker recovered it yet).
    Running Work under a live lease is refused: wait for its attempt to end (or its lease to
    expire). Canceling canceled Work changes nothing."""
    identifier(actor, "actor")
    wid = _work_id(work_id)
    with scoped(scope, using=using) as cur:
        row = _locked(cur, scope, wid)
        if row.state == CANCELED:
            return row.state
        lapsed = row.state == RUNNING and (row.lease_expires_at is None
                                           or row.lease_expires_at <= row.now)
        if row.state not in (PENDING, SUSPENDED) and not lapsed:
            raise WorkStateConflict("only pending or suspended Work, or running Work whose "
                                    "lease has ended, can be canceled", state=row.state,
                                    work_id=str(wid), lease_expires_at=row.lease_expires_at)
        detail: dict[str, Any] = {}
        if row.suspension_reason is not None:
            # Canceled Work waits for no operator: the reason leaves the row (as proof and
            # resume take it away) and stays in the history.
            detail["suspension_reason"] = row.suspension_reason
        if lapsed:
            # The lease holder's outcome, should it still arrive, is fenced (its lease no longer
            # holds the Work); an unresolved permit stays unresolved: nobody knows its effect.
            detail.update(lease_owner=row.lease_owner, lease_expires_at=row.lease_expires_at,
                          unresolved_permit_no=row.open_permit_no)
        row = transition(cur, row, event="canceled", actor=actor, detail=detail,
                         state=CANCELED, finished_at=row.now, dispatch="delete",
                         lease_owner=None, lease_expires_at=None, suspension_reason=None)
    return row.state
