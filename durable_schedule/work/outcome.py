"""Recording what an executor or reconciler reported (issue 3, items 4 and 5;
docs/protocol/work.md).

Each outcome is one scoped transaction that locks the Work row only while the lease this worker
was given still holds it (``state = 'running'`` and the same owner and lease generation). When
that lock finds nothing, the lease was lost -- another worker took the Work over, or an operator
moved it -- and the outcome is a typed "lost": an executor's result is kept in
``durable_work_quarantine`` as evidence and never becomes success.

Attempt outcomes under a held lease:

* success before the deadline: ``succeeded`` (a plan circuit that closed admission meanwhile does
  not revoke an admitted attempt's ordinary success, docs/protocol/work.md);
* success at or after the deadline: the result is quarantined (``late_result``), the permit
  resolved ``quarantined``, the Work ``expired`` with the first-closure facts recorded;
* failure: the retry policy decides (next slot / backoff, or ``failed`` / ``expired``);
* not invoked (the local check before invocation found the deadline or lease end passed): the
  permit is resolved ``proven_no_effect`` and the attempt is handed back (no slot consumed),
  claimable again when the attempt's lease would have ended.

Reconciler verdicts: ``Applied`` establishes success with its result (also after the cutoff:
proof of a past effect reopens nothing); ``NotApplied`` resolves the permit and lets the next
attempt proceed under the retry policy; ``Unknown`` (or a reconciler that raised or returned no
verdict) suspends the Work with reason ``reconciliation_unknown``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from durable_schedule.errors import DurableError
from durable_schedule.store.sqlfiles import query
from durable_schedule.work import codec
from durable_schedule.work.decisions import (
    RECONCILIATION_UNKNOWN,
    Action,
    Invoke,
    Reconcile,
    admit_pending,
    after_failure,
    error_detail,
    suspend,
)
from durable_schedule.work.failures import MESSAGE_LIMIT, safe_text
from durable_schedule.work.rows import (
    EXPIRED,
    PENDING,
    SUCCEEDED,
    WorkRow,
    dumps,
    lock_leased,
    routed_block,
    transition,
)
from durable_schedule.work.safety import Applied, NotApplied, Unknown, Verdict

_QUERIES = "work_queries.sql"


@dataclass(frozen=True)
class AttemptOutcome:
    """What came back from an invocation: ``succeeded`` / ``failed`` / ``not_invoked`` /
    ``handed_back`` (a stopping worker did not start it) / ``abandoned`` (a cancelled async
    executor that did not finish within its grace: nothing is recorded)."""

    kind: str
    result_json: str | None = None
    error: dict[str, Any] | None = None
    #: What the executor asked to run once this outcome is recorded
    #: (``WorkContext.after_outcome``); not part of the outcome itself.
    followups: tuple[Callable[[], None], ...] = field(default=(), compare=False, repr=False)


log = logging.getLogger("durable_schedule.work")


def run_followups(outcomes: Iterable[AttemptOutcome]) -> None:
    """Run the ``after_outcome`` callables of outcomes that were just recorded."""
    run_after_record(fn for outcome in outcomes for fn in outcome.followups)


def run_after_record(fns: Iterable[Callable[[], None]]) -> None:
    """Run ``after_outcome`` callables once what they wait for is recorded (an attempt's
    outcome, a reconciler's verdict). One that raises is logged: the record is committed, and
    the pass goes on."""
    for fn in fns:
        try:
            fn()
        except Exception:  # noqa: BLE001 -- a follow-up cannot undo a committed record
            log.exception("a callable run after an outcome was recorded raised; the outcome "
                          "stands")


#: The permit resolutions this lease's own outcome record writes, by outcome kind: a success
#: completes (or, at or after the deadline, is quarantined as late), a failure fails.
_OWN_RESOLUTIONS = {"succeeded": (("succeeded", "executor"), ("quarantined", "runtime")),
                    "failed": (("failed", "executor"),)}

# Only on the fenced path (never the hot path): did this very lease already record this
# permit's outcome? A permit number is admitted once, under one lease generation and owner, so a
# match can only be this attempt's own earlier, committed record.
_OWN_RECORD = """
SELECT p.outcome, p.resolution_source, w.state
  FROM durable_work w
  JOIN durable_work_permit p ON p.scope_id = w.scope_id AND p.work_id = w.work_id
 WHERE w.id = %(id)s AND p.permit_no = %(permit_no)s
   AND p.lease_generation = %(lease_generation)s AND p.resolved_by = %(lease_owner)s
"""


def _already_recorded(cur, action: Invoke | Reconcile, owner: str, outcome: AttemptOutcome,
                      tally: Counter) -> bool:
    """True (and the recorded outcome counted) when a retried phase finds the outcome its first
    try committed: a commit whose acknowledgement was lost (the connection cut right after
    COMMIT) is retried by runner.retry, and the lease that commit cleared must not read as
    lost -- the result would be quarantined a second time as evidence of a takeover that never
    happened."""
    cur.execute(_OWN_RECORD, {"id": action.row.id, "permit_no": action.permit_no,
                              "lease_generation": action.row.lease_generation,
                              "lease_owner": owner})
    found = cur.fetchone()
    if found is None or (found[0], found[1]) not in _OWN_RESOLUTIONS.get(outcome.kind, ()):
        return False
    permit_outcome, _, state = found
    if permit_outcome == "succeeded":
        tally["succeeded"] += 1
    elif permit_outcome == "quarantined":
        tally["quarantined"] += 1
        tally["expired"] += 1
    else:
        tally["retried" if state == "pending" else state] += 1
    return True


def record_lost(cur, action: Invoke | Reconcile, owner: str, outcome: AttemptOutcome | None,
                tally: Counter) -> None:
    if outcome is None or outcome.kind in ("not_invoked", "handed_back"):
        tally["lost"] += 1
        return
    if _already_recorded(cur, action, owner, outcome, tally):
        return
    tally["lost"] += 1
    tally["quarantined"] += 1
    detail = {"reason": "lease_lost", "outcome": outcome.kind, "permit_no": action.permit_no,
              "error": outcome.error}
    cur.execute(query(_QUERIES, "quarantine_lost"), {
        "id": action.row.id,
        "attempt": action.row.attempt,
        "lease_owner": owner,
        "lease_generation": action.row.lease_generation,
        "reason": "lease_lost",
        "result": outcome.result_json,
        "detail": dumps(detail),
    })


def record_attempt_outcome(action: Invoke, outcome: AttemptOutcome, owner: str,
                           using: str | None) -> Counter:
    tally: Counter = Counter()
    if outcome.kind == "abandoned":
        # Nothing is written: the attempt is left as a crashed worker leaves it (its lease
        # expires, the next claim reconciles before any retry: docs/work.md "Concurrency").
        tally["abandoned"] += 1
        return tally
    held = action.row
    with routed_block(action.routing_id, using) as (cur, scope_id):
        row = None if scope_id is None else lock_leased(cur, held.id, owner, held.lease_generation)
        if row is None:
            record_lost(cur, action, owner, outcome, tally)
            return tally
        apply_outcome(cur, row, action.permit_no, outcome, owner, tally)
    return tally


def apply_outcome(cur, row: WorkRow, permit: int, outcome: AttemptOutcome, owner: str,
                   tally: Counter) -> None:
    cleared = dict(lease_owner=None, lease_expires_at=None)
    if outcome.kind in ("not_invoked", "handed_back"):
        # Nothing ran, so no slot is consumed. not_invoked: the local clock saw the attempt's
        # lease end (at the latest: the deadline) pass before invocation; the database decides
        # again when that lease end arrives by its own clock (at D it refuses and closes
        # admission). handed_back: a stopping worker gives back an admitted attempt it will
        # not start (docs/work.md "Concurrency"); it is due again at once.
        stopping = outcome.kind == "handed_back"
        tally["released" if stopping else "refused"] += 1
        transition(cur, row, event="not_invoked", actor=owner,
                   detail={"permit_no": permit, "cause": "worker_stopping" if stopping
                           else "cancelled_before_invocation"},
                   resolve=(permit, "proven_no_effect", "runtime"), state=PENDING,
                   attempt=row.attempt - 1, dispatch="upsert",
                   dispatch_due_at=row.due_at if stopping else max(row.due_at,
                                                                   row.lease_expires_at),
                   **cleared)
        return
    if outcome.kind == "failed":
        after_failure(cur, row, owner, error=outcome.error or {}, tally=tally,
                      cause="executor_failed", resolve=(permit, "failed", "executor"),
                      detail={"permit_no": permit})
        return
    if row.deadline_reached():
        # docs/protocol/work.md: a current late encoded result is quarantined as evidence and does
        # not become Work success; the deadline closed ordinary success at or after D.
        reason = row.admission_closed()
        tally["quarantined"] += 1
        tally["expired"] += 1
        transition(cur, row, event="late_result_quarantined", actor=owner,
                   detail={"permit_no": permit, "reason": reason}, close=reason,
                   resolve=(permit, "quarantined", "runtime"),
                   quarantine=("late_result", outcome.result_json), state=EXPIRED,
                   finished_at=row.now, dispatch="delete", **cleared)
        return
    tally["succeeded"] += 1
    transition(cur, row, event="succeeded", actor=owner, detail={"permit_no": permit},
               resolve=(permit, "succeeded", "executor"), state=SUCCEEDED,
               result=outcome.result_json, finished_at=row.now, dispatch="delete", **cleared)


def record_reconciliation(action: Reconcile, verdict: Verdict | None,
                          error: dict[str, Any] | None, owner: str,
                          using: str | None) -> tuple[Action, Counter]:
    """Apply a verdict under the reconciliation lease; may admit the next attempt at once."""
    tally: Counter = Counter()
    held = action.row
    with routed_block(action.routing_id, using) as (cur, scope_id):
        row = None if scope_id is None else lock_leased(cur, held.id, owner, held.lease_generation)
        if row is None:
            record_fenced_verdict(cur, action, verdict, error, owner, tally)
            return None, tally
        tally["reconciled"] += 1
        next_action = _apply_verdict(cur, action, row, verdict, error, owner, tally)
    return next_action, tally


# Only on the fenced path: did this very reconciliation lease already record its verdict (a
# commit whose acknowledgement was lost, retried by runner.retry)? Applied and NotApplied resolve
# the judged permit as this owner with source ``reconciler``; Unknown suspends the Work under
# this lease generation (a takeover would have granted a new one).
_OWN_VERDICT = """
SELECT EXISTS (
           SELECT 1 FROM durable_work_permit p
            WHERE p.scope_id = w.scope_id AND p.work_id = w.work_id
              AND p.permit_no = %(permit_no)s AND p.resolution_source = 'reconciler'
              AND p.resolved_by = %(lease_owner)s)
       OR (w.state = 'suspended' AND w.lease_generation = %(lease_generation)s
           AND w.suspension_reason = %(unknown)s)
  FROM durable_work w
 WHERE w.id = %(id)s
"""


def _verdict_name(verdict: Verdict | None) -> str:
    if isinstance(verdict, Applied):
        return "applied"
    if isinstance(verdict, NotApplied):
        return "not_applied"
    return "unknown" if verdict is not None else "none"


def record_fenced_verdict(cur, action: Reconcile, verdict: Verdict | None,
                          error: dict[str, Any] | None, owner: str, tally: Counter) -> None:
    """A reconciler answered after its lease was lost (another worker took the Work over, or an
    operator moved it): the verdict changes nothing -- the permit stays as the current holder
    leaves it -- but the reconciliation ran, and may have touched the external system, so it is
    kept as evidence in the same transaction that found the lease lost: a
    ``reconciliation_fenced`` history row (actor: this lease's owner; detail: the verdict, the
    judged permit, the reconciler's error or Unknown reason) and, for an ``Applied`` verdict,
    its result in ``durable_work_quarantine`` (reason ``reconciliation_lost``). Not written
    when nothing was invoked, or when this lease's own committed verdict is found again (a
    retried commit)."""
    cur.execute(_OWN_VERDICT, {"id": action.row.id, "permit_no": action.permit_no,
                               "lease_owner": owner,
                               "lease_generation": action.row.lease_generation,
                               "unknown": RECONCILIATION_UNKNOWN})
    found = cur.fetchone()
    if found is not None and found[0]:
        tally["reconciled"] += 1
        return
    tally["lost"] += 1
    result_json = None
    if isinstance(verdict, Applied):
        try:
            result_json = codec.canonical_json(verdict.result, "result")
        except DurableError as exc:
            error = error_detail(exc)
    detail = {"reason": "lease_lost", "verdict": _verdict_name(verdict),
              "permit_no": action.permit_no, "permit_attempt": action.permit_attempt}
    if error is not None:
        # Not "error": work.attempts() reads a history row's error as the attempt's failure.
        detail["reconciler_error"] = error
    if isinstance(verdict, Unknown):
        # User text, stored as every failure message is: escaped for jsonb and bounded (a NUL
        # failed this very transaction, and the evidence with it).
        reason = verdict.reason
        detail["verdict_reason"] = (
            None if reason is None or (isinstance(reason, str) and not reason)
            else safe_text(reason)[:MESSAGE_LIMIT])
    if result_json is not None:
        tally["quarantined"] += 1
    cur.execute(query(_QUERIES, "reconciliation_fenced"), {
        "id": action.row.id,
        "attempt": action.permit_attempt,
        "lease_owner": owner,
        "lease_generation": action.row.lease_generation,
        "result": result_json,
        "detail": dumps(detail),
    })


def _apply_verdict(cur, action: Reconcile, row: WorkRow, verdict: Verdict | None,
                   error: dict[str, Any] | None, owner: str, tally: Counter) -> Action:
    permit = action.permit_no
    detail = {"permit_no": permit, "permit_attempt": action.permit_attempt}
    if isinstance(verdict, Applied):
        try:
            result_json = codec.canonical_json(verdict.result, "result")
        except DurableError as exc:
            verdict, error = None, error_detail(exc)
        else:
            tally["succeeded"] += 1
            transition(cur, row, event="reconciled_applied", actor=owner, detail=detail,
                       resolve=(permit, "applied", "reconciler"), state=SUCCEEDED,
                       result=result_json, finished_at=row.now, lease_owner=None,
                       lease_expires_at=None, dispatch="delete")
            return None
    if isinstance(verdict, NotApplied):
        resolve = (permit, "not_applied", "reconciler")
        if row.open_permits > 1:
            # Another admitted effect is still uncertain: judge it next, under the same lease
            # and the same lifetime cap, counted from the reconciliation's start.
            transition(cur, row, event="reconciled_not_applied", actor=owner, detail=detail,
                       resolve=resolve)
            again = lock_leased(cur, row.id, owner, row.lease_generation)
            return Reconcile(action.routing_id, again, action.definition, again.open_permit_no,
                             again.open_permit_attempt, action.started_at)
        row = after_failure(cur, row, owner, tally=tally, cause="reconciled_not_applied",
                            resolve=resolve, detail=detail, error=error_detail(
                                code="not_applied",
                                message="the reconciler proved the attempt had no effect"))
        if row.state == PENDING and row.due_at <= row.now:
            return admit_pending(cur, action.routing_id, row, owner, tally)
        return None
    if error is None:
        error = error_detail(code="unknown", message=getattr(verdict, "reason", "") or
                             "the reconciler could not establish whether the effect happened")
    suspend(cur, row, owner, reason=RECONCILIATION_UNKNOWN, error=error, tally=tally)
    return None
