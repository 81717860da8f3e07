"""One bounded pass of the Work runtime: ``process_work_pass(...) -> WorkPassCounts`` (issue 3).

The shape follows River's ``run_once`` (docs/protocol/conventions.md rule C6): ``manage.py
process_work`` runs one pass; the
``--loop`` runner of a later issue calls the same function again and again.

A pass:

1. **Claim** (one outermost ``runtime_transaction()``, no scope): check the schema floor, then
   ``claim_work_dispatch(owner, lease, n)`` leases up to ``batch`` due dispatch rows in one
   statement and returns routing facts only. The claim commits before any scoped data is read.
2. **Admit** (per claimed row, its own scoped transaction through its routing id): lock the Work
   row, verify the dispatch revision and owner the claim returned, sample the clock after the
   lock, then refuse, suspend, reconcile or admit (:mod:`.decisions`). Admission writes the
   ``running`` state, the new lease and the effect permit, and commits *before* the executor is
   invoked. Crash barrier ``work-permit-after-commit``.
3. **Invoke** outside any transaction, with a deadline-bounded cancellation signal and a watchdog
   that renews the lease at the policy's cadence. Crash barrier ``work-effect-before-outcome``.
4. **Outcome** (scoped transaction guarded by the lease): :mod:`.outcome`.

A retry that is due at once (an overdue planned slot) is claimable again within the same pass,
which is how fast failures consume overdue slots in a burst. The stop callable is checked before
every new claim and every claimed row; claimed rows a stopping pass will not process are handed
back at once.
"""

from __future__ import annotations

import os
import socket
from collections import Counter
from dataclasses import dataclass, fields
from datetime import datetime
from functools import partial

from durable_schedule import conf
from durable_schedule.barriers import (
    WORK_EFFECT_BEFORE_OUTCOME,
    WORK_PERMIT_AFTER_COMMIT,
    barrier,
)
from durable_schedule.errors import InvalidArgument, InvalidLease, LeaseLost, SchemaBelowFloor
from durable_schedule.evaluation.policy import MAX_INSTANT, bounded_add, lease_expiry
from durable_schedule.observability.metrics import instrumented_pass, timed_claim
from durable_schedule.observability.tracing import traced_attempt
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION
from durable_schedule.work import codec
from durable_schedule.work.decisions import Invoke, Reconcile, decide, error_detail
from durable_schedule.work.executor import WorkContext, run_guarded
from durable_schedule.work.outcome import (
    AttemptOutcome,
    record_attempt_outcome,
    record_reconciliation,
)
from durable_schedule.work.rows import LeaseConflict, lock_claimed, lock_leased, routed_block
from durable_schedule.work.rows import runtime_block as _runtime_block
from durable_schedule.work.safety import verdict as as_verdict

_QUERIES = "work_queries.sql"


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

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.as_dict().items())


@dataclass(frozen=True)
class _Claim:
    routing_id: int
    work_ref: int
    revision: int


@dataclass(frozen=True)
class _Options:
    owner: str
    heartbeat: bool
    using: str


def default_lease_owner() -> str:
    """``host:pid``: unique per worker process, readable in history and the admin."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def _validate(max_items: object, batch: object, owner: object, lease_seconds: object) -> None:
    for name, value in (("max_items", max_items), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgument(f"{name} must be an int >= 1", value=value)
    if batch > 1000:
        raise InvalidArgument("batch must be at most 1000 (claim_work_dispatch's limit)")
    if (not isinstance(owner, str) or not owner.strip() or len(owner) > 200
            or any(ord(c) < 32 or ord(c) == 127 for c in owner)):
        raise InvalidLease("lease owner must be 1-200 characters without control characters",
                           owner=owner)
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int | float) or not (
            0 < lease_seconds <= 600):
        raise InvalidLease("lease seconds must be > 0 and <= 600", lease_seconds=lease_seconds)


@instrumented_pass("work")  # metrics + span (docs/operations.md "Metrics")
def process_work_pass(*, max_items: int = 100, lease_owner: str | None = None,
                      lease_seconds: float | None = None, batch: int = 10,
                      heartbeat: bool = True, stop=None,
                      using: str | None = None) -> WorkPassCounts:
    """Process at most ``max_items`` claimed dispatch rows; returns the counts (zero if idle).

    ``lease_seconds`` is the claim lease (how long a claimed row waits for its admission
    transaction; default ``DURABLE_SCHEDULE['LEASE_SECONDS']``); an admitted attempt then holds
    the lease its retry policy names. ``stop()`` returning true ends the pass early.
    """
    owner = default_lease_owner() if lease_owner is None else lease_owner
    seconds = conf.lease_seconds() if lease_seconds is None else lease_seconds
    _validate(max_items, batch, owner, seconds)
    opts = _Options(owner, heartbeat, using or conf.database_alias())
    tally: Counter = Counter()
    processed = 0
    while processed < max_items and not (stop is not None and stop()):
        claims = _claim(opts, seconds, min(batch, max_items - processed))
        tally["claimed"] += len(claims)
        if not claims:
            break
        for i, claim in enumerate(claims):
            if stop is not None and stop():
                tally["released"] += _release(claims[i:], opts)
                break
            _process(claim, opts, tally)
            processed += 1
    return WorkPassCounts(**{k: tally[k] for k in WorkPassCounts.__dataclass_fields__})


@timed_claim("work")  # claim latency metric
def _claim(opts: _Options, lease_seconds: float, n: int) -> list[_Claim]:
    with _runtime_block(opts.using) as cur:
        cur.execute(query(_QUERIES, "store_floor"))
        version, floor = cur.fetchone()
        if version < REQUIRED_SCHEMA or floor > SCHEMA_VERSION:
            raise SchemaBelowFloor(
                f"database schema {version} (floor {floor}) does not fit this code "
                f"(requires {REQUIRED_SCHEMA}, writes {SCHEMA_VERSION})")
        cur.execute(query(_QUERIES, "claim"),
                    {"owner": opts.owner, "lease_seconds": lease_seconds, "max_rows": n})
        rows = cur.fetchall()
    return [_Claim(*row) for row in rows]


def _release(claims: list[_Claim], opts: _Options) -> int:
    released = 0
    for claim in claims:
        with routed_block(claim.routing_id, opts.using) as (cur, scope_id):
            if scope_id is not None:
                cur.execute(query(_QUERIES, "dispatch_release_claim"), {
                    "id": claim.work_ref, "dispatch_revision": claim.revision,
                    "lease_owner": opts.owner})
                released += cur.rowcount
    return released


def _process(claim: _Claim, opts: _Options, tally: Counter) -> None:
    try:
        action = _admit(claim, opts, tally)
        while action is not None:
            if isinstance(action, Invoke):
                barrier(WORK_PERMIT_AFTER_COMMIT)
                outcome = _invoke(action, opts)
                barrier(WORK_EFFECT_BEFORE_OUTCOME)
                tally.update(record_attempt_outcome(action, outcome, opts.owner, opts.using))
                action = None
            else:
                found, error = _reconcile(action, opts)
                action, counts = record_reconciliation(action, found, error, opts.owner,
                                                       opts.using)
                tally.update(counts)
    except LeaseConflict:
        # A guarded statement found the row moved on after the lock (only a tampered store can
        # do that): its transaction rolled back, and the row is left to the next claim.
        tally["lost"] += 1


def _admit(claim: _Claim, opts: _Options, tally: Counter):
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


def _context(action: Invoke | Reconcile, opts: _Options, *, reconciling: bool) -> WorkContext:
    row = action.row
    return WorkContext(
        scope=row.scope_id, work_id=row.work_id, work_name=row.work_name,
        work_version=row.work_version,
        attempt=action.permit_attempt if reconciling else row.attempt,
        permit_no=action.permit_no, deadline=row.execution_deadline, due_at=row.due_at,
        admitted_at=row.now, lease_owner=opts.owner, lease_generation=row.lease_generation,
        lease_expires_at=row.lease_expires_at, reconciling=reconciling,
        renewer=partial(_renew, action.routing_id, row.id, reconciling, opts.using),
    )


def _renew(routing_id: int, work_ref: int, reconciling: bool, using: str,
           ctx: WorkContext) -> tuple[datetime, datetime]:
    """Extend the lease through the guarded SQL; capped as docs/protocol/work.md says."""
    with routed_block(routing_id, using) as (cur, scope_id):
        row = None
        if scope_id is not None:
            row = lock_leased(cur, work_ref, ctx.lease_owner, ctx.lease_generation)
        if row is None:
            raise LeaseLost("the lease was taken over; stop working on this attempt",
                            work_id=str(ctx.work_id))
        retry = row.policy.retry
        if reconciling:
            expires = bounded_add(row.now, retry.lease_duration, MAX_INSTANT)
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
def _invoke(action: Invoke, opts: _Options) -> AttemptOutcome:
    ctx = _context(action, opts, reconciling=False)
    if ctx.past_cancel_point():
        return AttemptOutcome("not_invoked")
    definition = action.definition
    cadence = action.row.policy.retry.renewal_cadence.total_seconds()
    try:
        payload = definition.codec.decode(action.row.payload)
        result = run_guarded(definition.executor_fn, ctx, payload, heartbeat=opts.heartbeat,
                             cadence_seconds=cadence, using=opts.using)
        result_json = codec.canonical_json(result, "result")
    except Exception as exc:  # any executor error is a failed attempt; the policy decides
        return AttemptOutcome("failed", error=error_detail(exc, attempt=action.row.attempt))
    return AttemptOutcome("succeeded", result_json=result_json)


def _reconcile(action: Reconcile, opts: _Options):
    ctx = _context(action, opts, reconciling=True)
    definition = action.definition
    cadence = action.row.policy.retry.renewal_cadence.total_seconds()
    try:
        payload = definition.codec.decode(action.row.payload)
        value = run_guarded(definition.reconciler_fn, ctx, payload, heartbeat=opts.heartbeat,
                            cadence_seconds=cadence, using=opts.using)
    except Exception as exc:  # a reconciler that cannot answer is Unknown (suspends)
        return None, error_detail(exc, permit_no=action.permit_no)
    found = as_verdict(value)
    if found is None:
        return None, error_detail(code="invalid_verdict", permit_no=action.permit_no,
                                  message=f"the reconciler returned {value!r}, not Applied / "
                                          "NotApplied / Unknown")
    return found, None
