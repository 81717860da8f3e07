"""The per-item primitives of the Work runtime (issue 3; issue 11 items 3 and 5).

The pass (:mod:`.passes`, ``process_work_pass``) drives them; batched admission and the group
commit are in :mod:`.pipeline`, the executor pool in :mod:`.concurrency`. An item:

1. **Claim** (one outermost ``runtime_transaction()``, no scope): check the schema floor, then
   ``claim_work_dispatch(owner, lease, n)`` leases due dispatch rows in one statement and
   returns routing facts only. The claim commits before any scoped data is read.
2. **Admit** (its own scoped transaction through its routing id): lock the Work row, verify the
   dispatch revision and owner the claim returned, sample the clock after the lock, then
   refuse, suspend, reconcile or admit (:mod:`.decisions`). Admission writes the ``running``
   state, the new lease and the effect permit, and commits *before* the executor is invoked.
   Crash barrier ``work-permit-after-commit``.
3. **Invoke** outside any transaction, with a deadline-bounded cancellation signal and a
   watchdog that renews the lease at the policy's cadence. The local budget counts from the
   monotonic instant before the admission statement was sent and is checked again right before
   the call (docs/work.md "The local lease budget"). Crash barrier
   ``work-effect-before-outcome``.
4. **Outcome** (scoped transaction guarded by the lease): :mod:`.outcome`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, fields
from datetime import datetime
from functools import partial
from typing import Any

from durable_schedule.barriers import (
    WORK_EFFECT_BEFORE_OUTCOME,
    WORK_PERMIT_AFTER_COMMIT,
    barrier,
)
from durable_schedule.errors import (
    ExecutorReturnedAwaitable,
    InvalidArgument,
    InvalidLease,
    LeaseLost,
    SchemaBelowFloor,
    alias_of,
)
from durable_schedule.evaluation.policy import lease_expiry
from durable_schedule.observability.metrics import timed_claim
from durable_schedule.observability.tracing import traced_attempt
from durable_schedule.runner.retry import run_with_retry
from durable_schedule.store import identifiers
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION
from durable_schedule.work import aio, clock, codec
from durable_schedule.work.decisions import Invoke, Reconcile, decide, error_detail
from durable_schedule.work.executor import OverBudget, WorkContext, run_guarded, start_async
from durable_schedule.work.failures import log_failure, safe_text
from durable_schedule.work.outcome import (
    AttemptOutcome,
    record_attempt_outcome,
    record_reconciliation,
    run_after_record,
    run_followups,
)
from durable_schedule.work.rows import LeaseConflict, lock_claimed, lock_leased, routed_block
from durable_schedule.work.rows import runtime_block as _runtime_block
from durable_schedule.work.safety import verdict as as_verdict

_QUERIES = "work_queries.sql"
log = logging.getLogger("durable_schedule.work")
#: The shortest claim lease the store can represent (intervals have microsecond resolution).
MIN_LEASE_SECONDS = 1e-6
#: ``_reconcile``'s answer when the reconciler was not invoked (its local budget ran out).
_NOT_INVOKED = object()
#: ``_reconcile``'s answer when an async reconciler ignored its cancellation past the grace:
#: nothing is recorded either, but the pass counts it ``abandoned`` (docs/work.md).
_ABANDONED = object()


@dataclass(frozen=True)
class WorkPassCounts:
    """What one pass did. ``claimed`` rows end in exactly one of the other row-level outcomes,
    except that one row may produce several attempts (a burst) or a reconciliation first."""

    claimed: int = 0
    admitted: int = 0
    succeeded: int = 0
    retried: int = 0
    failed: int = 0
    expired: int = 0
    suspended: int = 0
    quarantined: int = 0
    reconciled: int = 0
    recovered: int = 0
    refused: int = 0
    not_due: int = 0
    busy: int = 0
    lost: int = 0
    skipped: int = 0
    released: int = 0
    #: Cancelled async executors that did not finish within their grace: nothing recorded,
    #: their leases expire (docs/work.md "Concurrency").
    abandoned: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.as_dict().items())


@dataclass(frozen=True)
class Claim:
    """What ``claim_work_dispatch`` returned for one row: routing facts only."""

    routing_id: int
    work_ref: int
    revision: int


@dataclass(frozen=True)
class Options:
    owner: str
    heartbeat: bool
    using: str
    #: The queues this worker serves, or None for every queue (docs/work.md "Queues and
    #: priorities").
    queues: tuple[str, ...] | None = None

    @property
    def claim_queues(self) -> list[str] | None:
        return None if self.queues is None else list(self.queues)


# Historical names (tests drive the per-item primitives directly).
_Claim, _Options = Claim, Options


def default_lease_owner() -> str:
    """``host:pid``: unique per worker process, readable in history and the admin."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def _validate(max_items: object, batch: object, owner: object, lease_seconds: object) -> None:
    for name, value in (("max_items", max_items), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgument(f"{name} must be an int >= 1", value=value)
    if batch > 1000:
        raise InvalidArgument("batch must be at most 1000 (claim_work_dispatch's limit)")
    if (not isinstance(owner, str) or len(owner) > 200
            or identifiers.problem(owner) is not None):  # the rule of store/identifiers.py
        raise InvalidLease("lease owner must be 1-200 characters, not blank, without control, "
                           "format or separator characters", owner=owner)
    # At least a microsecond: the claim's make_interval rounds to whole microseconds, and a
    # lease that rounds to zero was refused by the store only after the pass had started.
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int | float) or not (
            MIN_LEASE_SECONDS <= lease_seconds <= 600):
        raise InvalidLease("lease seconds must be >= 0.000001 (a microsecond) and <= 600",
                           lease_seconds=lease_seconds)


def check_floor(cur) -> None:
    """Refuse to work on a store whose schema does not fit this code (DS401)."""
    cur.execute(query(_QUERIES, "store_floor"))
    refuse_below_floor(*cur.fetchone(), using=alias_of(cur))


def refuse_below_floor(version: int, floor: int, *, using: str | None) -> None:
    if version < REQUIRED_SCHEMA or floor > SCHEMA_VERSION:
        raise SchemaBelowFloor(
            f"database schema {version} (floor {floor}) does not fit this code "
            f"(requires {REQUIRED_SCHEMA}, writes {SCHEMA_VERSION})", using=using)


@timed_claim("work")  # claim latency metric
def _claim(opts: Options, lease_seconds: float, n: int) -> list[Claim]:
    with _runtime_block(opts.using) as cur:
        check_floor(cur)
        cur.execute(query(_QUERIES, "claim"),
                    {"owner": opts.owner, "lease_seconds": lease_seconds, "max_rows": n,
                     "queues": opts.claim_queues})
        rows = cur.fetchall()
    return [Claim(*row) for row in rows]


def release(claims: list[Claim], opts: Options) -> int:
    released = 0
    for claim in claims:
        with routed_block(claim.routing_id, opts.using) as (cur, scope_id):
            if scope_id is not None:
                cur.execute(query(_QUERIES, "dispatch_release_claim"), {
                    "id": claim.work_ref, "dispatch_revision": claim.revision,
                    "lease_owner": opts.owner})
                released += cur.rowcount
    return released


def process_one(claim: Claim, opts: Options, tally: Counter, stop=None) -> None:
    """The per-item path: admit, invoke or reconcile, record -- each its own transaction.

    Each transaction of the row is retried on its own under the claim or lease it still holds
    (a whole-pass retry would find the row leased and claim nothing, issue 11 item 6); the
    executor and the reconciler in between are never re-run by a retry. ``stop``: the pass's
    stop callable; an attempt admitted when it has turned true (by a ``NotApplied`` verdict, or
    while the admission ran) is handed back, not started: a stopping worker starts no new
    attempt (docs/work.md "Concurrency")."""
    identity = {"routing_id": claim.routing_id, "work_ref": claim.work_ref}
    try:
        # The local budget starts before the admission statement is sent (docs/work.md "The
        # local lease budget"): a stall after it only shortens what is left, never extends it.
        origin = clock.monotonic()
        action = run_with_retry("work.admit", lambda: _admit(claim, opts, tally),
                                identity=identity)
        while action is not None:
            if isinstance(action, Invoke):
                if stop is not None and stop():
                    outcome = AttemptOutcome("handed_back")
                else:
                    barrier(WORK_PERMIT_AFTER_COMMIT)
                    outcome = invoke(action, opts, origin)
                    barrier(WORK_EFFECT_BEFORE_OUTCOME)
                tally.update(run_with_retry(
                    "work.outcome", partial(record_attempt_outcome, action, outcome, opts.owner,
                                            opts.using), identity=identity))
                run_followups([outcome])
                action = None
            else:
                found, error, followups = _reconcile(action, opts, origin)
                if found is _NOT_INVOKED or found is _ABANDONED:
                    # The reconciliation lease ended locally before the reconciler ran, or an
                    # async reconciler was abandoned: record nothing; the lease expires and the
                    # next claim reconciles again.
                    tally["abandoned" if found is _ABANDONED else "refused"] += 1
                    break
                origin = clock.monotonic()  # a NotApplied verdict may admit the next attempt
                action, counts = run_with_retry(
                    "work.reconciliation", partial(record_reconciliation, action, found, error,
                                                   opts.owner, opts.using), identity=identity)
                tally.update(counts)
                # As after an attempt's outcome: what the reconciler asked to run once its
                # verdict is recorded (the tasks backend's task_finished).
                run_after_record(followups)
    except LeaseConflict:
        # A guarded statement found the row moved on after the lock (only a tampered store can
        # do that): its transaction rolled back, and the row is left to the next claim.
        tally["lost"] += 1


def _admit(claim: Claim, opts: Options, tally: Counter):
    local: Counter = Counter()
    with routed_block(claim.routing_id, opts.using) as (cur, scope_id):
        row = None if scope_id is None else lock_claimed(cur, claim.work_ref)
        if row is None or (row.dispatch_revision, row.dispatch_owner) != (
                claim.revision, opts.owner):
            local["skipped"] += 1  # the claim went stale: another worker holds the row now
            action = None
        else:
            action = decide(cur, claim.routing_id, row, opts.owner, local)
    tally.update(local)
    return action


def context(action: Invoke | Reconcile, opts: Options, origin: float, *,
             reconciling: bool) -> WorkContext:
    row = action.row
    return WorkContext(
        scope=row.scope_id, work_id=row.work_id, work_name=row.work_name,
        work_version=row.work_version,
        attempt=action.permit_attempt if reconciling else row.attempt,
        permit_no=action.permit_no, deadline=row.execution_deadline, due_at=row.due_at,
        admitted_at=row.now, lease_owner=opts.owner, lease_generation=row.lease_generation,
        lease_expires_at=row.lease_expires_at, reconciling=reconciling,
        renewer=partial(_renew, action.routing_id, row.id,
                        action.started_at if reconciling else None, opts.using),
        budget_origin=origin, using=opts.using,
    )


def _renew(routing_id: int, work_ref: int, reconciliation_start: datetime | None, using: str,
           ctx: WorkContext) -> tuple[datetime, datetime]:
    """Extend the lease through the guarded SQL; capped as docs/protocol/work.md says.
    ``reconciliation_start``: for a reconciliation lease, the instant it was taken."""
    with routed_block(routing_id, using) as (cur, scope_id):
        row = None
        if scope_id is not None:
            row = lock_leased(cur, work_ref, ctx.lease_owner, ctx.lease_generation)
        if row is None:
            raise LeaseLost("the lease was taken over; stop working on this attempt",
                            work_id=str(ctx.work_id))
        retry = row.policy.retry
        if reconciliation_start is not None:
            # Not capped by the deadline (reconciliation may run after it), but by the maximum
            # lease lifetime counted from the reconciliation's start, as an attempt's lease is
            # from its start -- one cap for every permit judged under this lease: a reconciler
            # that never returns stops being renewed, is cancelled at its lease end (an async
            # one fails with DS226: the Work is suspended for an operator) and the lease can be
            # taken over.
            expires = lease_expiry(row.now, retry.lease_duration, reconciliation_start,
                                   retry.maximum_lease_lifetime, None)
        else:
            expires = lease_expiry(row.now, retry.lease_duration, row.attempt_started_at,
                                   retry.maximum_lease_lifetime, row.execution_deadline)
        expires = max(expires, row.lease_expires_at)
        if expires != row.lease_expires_at:
            cur.execute(query(_QUERIES, "renew"), {
                "id": row.id, "now": row.now, "lease_expires_at": expires,
                "lease_owner": ctx.lease_owner, "lease_generation": ctx.lease_generation})
            if cur.fetchone()[0] != 1:
                raise LeaseLost("the lease moved on during renewal", work_id=str(ctx.work_id))
        return row.now, expires


@traced_attempt  # one span per attempt (docs/operations.md "Tracing")
def invoke(action: Invoke, opts: Options, origin: float,
           held: list[int] | None = None) -> AttemptOutcome:
    """Invoke the executor of an admitted attempt in this thread (an ``async def`` one on the
    event loop, waited for); the outcome, never an exception. ``held``: keep the attempt's
    lease renewed after it returns, until its outcome is committed (``run_guarded``)."""
    ctx = context(action, opts, origin, reconciling=False)
    if ctx.past_cancel_point():
        return AttemptOutcome("not_invoked")
    definition = action.definition
    cadence = action.row.policy.retry.renewal_cadence.total_seconds()
    try:
        payload = definition.codec.decode(action.row.payload)
        result = run_guarded(definition.executor_fn, ctx, payload, heartbeat=opts.heartbeat,
                             cadence_seconds=cadence, using=opts.using, held=held)
    except BaseException as exc:  # noqa: BLE001 -- mapped to the attempt's outcome
        return _failed(action, ctx, exc)
    return _succeeded(action, ctx, result)


def is_async(action: Invoke) -> bool:
    return aio.is_async(action.definition.executor_fn)


def invoke_async(action: Invoke, opts: Options, origin: float,
                 gate: aio.Gate | None = None) -> Future:
    """Start an ``async def`` executor on the event loop; a future of its AttemptOutcome."""
    ctx = context(action, opts, origin, reconciling=False)
    done: Future = Future()
    if ctx.past_cancel_point():
        done.set_result(AttemptOutcome("not_invoked"))
        return done
    definition = action.definition
    cadence = action.row.policy.retry.renewal_cadence.total_seconds()
    try:
        payload = definition.codec.decode(action.row.payload)
        started = start_async(definition.executor_fn, ctx, payload, heartbeat=opts.heartbeat,
                              cadence_seconds=cadence, using=opts.using, gate=gate)
    except Exception as exc:  # noqa: BLE001 -- a payload that cannot be decoded fails
        done.set_result(_failed(action, ctx, exc))
        return done

    def settle(f: Future) -> None:
        try:
            exc = f.exception()
            done.set_result(_failed(action, ctx, exc) if exc is not None
                            else _succeeded(action, ctx, f.result()))
        except BaseException as fatal:  # noqa: BLE001 -- never leave the pipeline waiting
            done.set_exception(fatal)

    started.add_done_callback(settle)
    return done


def _returned_awaitable(value: Any, what: str) -> ExecutorReturnedAwaitable | None:
    """The refusal of an awaitable where a value was due: a sync ``def`` that returns a
    coroutine (a lambda or a plain wrapper around an ``async def``, or an ``async def`` that
    returns another coroutine). It is not run; a coroutine is closed, so it never warns
    "was never awaited" later from the garbage collector."""
    if not inspect.isawaitable(value):
        return None
    if inspect.iscoroutine(value):
        value.close()
    return ExecutorReturnedAwaitable(
        f"the {what} returned {type(value).__name__} {safe_text(value, as_repr=True)[:200]}, "
        "an awaitable, instead of its result: it was not run")


def _succeeded(action: Invoke, ctx: WorkContext, result: Any) -> AttemptOutcome:
    refused = _returned_awaitable(result, "executor")
    if refused is not None:
        return _failed(action, ctx, refused)
    try:
        result_json = codec.canonical_json(result, "result")
    except Exception as exc:  # noqa: BLE001 -- a result that is not JSON fails the attempt
        return _failed(action, ctx, exc)
    return AttemptOutcome("succeeded", result_json=result_json,
                          followups=ctx.outcome_followups())


#: Control-flow signals that escaped an executor's (or reconciler's) own code: a generator
#: close or a cancelled ``await`` leaking out is that attempt's failure. Other BaseExceptions
#: (KeyboardInterrupt, SystemExit) stop the worker: not an executor's failure.
_ESCAPED_SIGNALS = (GeneratorExit, asyncio.CancelledError)


def _raised(exc: BaseException) -> BaseException:
    """The exception the executor raised (an async one's own CancelledError, KeyboardInterrupt
    or SystemExit comes wrapped)."""
    return exc.raised if isinstance(exc, (aio.EscapedCancel, aio.EscapedInterrupt)) else exc


def _abandoned(ctx: WorkContext, exc: aio.Abandoned, what: str) -> None:
    log.warning("%s of %s/%s (work %s, attempt %s) did not finish within %.1fs of its "
                "cancellation; left un-acknowledged: its lease expires and the next claim "
                "reconciles it as after a crashed worker", what, ctx.scope, ctx.work_name,
                ctx.work_id, ctx.attempt, exc.grace,
                extra={"scope_id": ctx.scope, "work_id": str(ctx.work_id),
                       "work_name": ctx.work_name, "attempt": ctx.attempt,
                       "permit_no": ctx.permit_no, "outcome": "abandoned"})


def _failed(action: Invoke, ctx: WorkContext, exc: BaseException) -> AttemptOutcome:
    if isinstance(exc, OverBudget):
        return AttemptOutcome("not_invoked")
    if isinstance(exc, aio.NotStarted):  # the pass stopped while it waited for a slot
        return AttemptOutcome("handed_back")
    if isinstance(exc, aio.Abandoned):
        _abandoned(ctx, exc, "the async executor")
        return AttemptOutcome("abandoned")
    exc = _raised(exc)
    if not isinstance(exc, (Exception, *_ESCAPED_SIGNALS)):
        raise exc  # KeyboardInterrupt, SystemExit: not an executor's failure
    # Any executor error is a failed attempt; the retry policy decides.
    log_failure("executor", ctx, exc)
    return AttemptOutcome("failed", error=error_detail(exc, attempt=action.row.attempt),
                          followups=ctx.outcome_followups())


def _reconcile(action: Reconcile, opts: Options, origin: float):
    ctx = context(action, opts, origin, reconciling=True)
    definition = action.definition
    cadence = action.row.policy.retry.renewal_cadence.total_seconds()
    try:
        payload = definition.codec.decode(action.row.payload)
        value = run_guarded(definition.reconciler_fn, ctx, payload, heartbeat=opts.heartbeat,
                            cadence_seconds=cadence, using=opts.using)
    except OverBudget:
        return _NOT_INVOKED, None, ()
    except aio.Abandoned as exc:
        # As a reconciliation lease that ended before the reconciler ran: record nothing.
        _abandoned(ctx, exc, "the async reconciler")
        return _ABANDONED, None, ()
    except aio.EscapedInterrupt as exc:  # stops the worker, as a synchronous reconciler's
        raise exc.raised from None
    except (Exception, *_ESCAPED_SIGNALS) as exc:  # a reconciler that cannot answer is
        exc = _raised(exc)  # Unknown (suspends)
        log_failure("reconciler", ctx, exc)
        return None, error_detail(exc, permit_no=action.permit_no), ctx.outcome_followups()
    refused = _returned_awaitable(value, "reconciler")
    if refused is not None:  # Unknown: the reconciler's answer was never computed
        log_failure("reconciler", ctx, refused)
        return (None, error_detail(refused, permit_no=action.permit_no),
                ctx.outcome_followups())
    found = as_verdict(value)
    if found is None:
        return None, error_detail(code="invalid_verdict", permit_no=action.permit_no,
                                  message=f"the reconciler returned "
                                          f"{safe_text(value, as_repr=True)}, not Applied / "
                                          "NotApplied / Unknown"), ctx.outcome_followups()
    return found, None, ctx.outcome_followups()
