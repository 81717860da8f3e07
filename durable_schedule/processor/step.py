"""One claimed schedule, one scoped runtime transaction (docs/protocol/schedules.md transaction form
2; docs/protocol/schedules.md items 1, 3, 4, 6, 7 and 10).

In order, in one transaction as ``durable_runtime`` with the claimed row's scope set locally:

1. lock the fence rows ``FOR SHARE`` (store epoch, scope generation) and the definition
   ``FOR UPDATE``; lock the dispatch row and check it still carries this claim (lease owner and
   dispatch revision as claimed). Otherwise an API change or a lease takeover superseded the
   claim: nothing is written.
2. fences: persisted runtime epoch vs store epoch, persisted scope generation vs the locked
   scope generation. A mismatch suspends (``runtime_epoch_mismatch`` first, it is the
   releasable one; else ``scope_generation_mismatch``) before the cursor moves or Work exists.
3. cutoff from ``durable_schedule_clock('clock')``; the slot (``FOR SHARE`` on the Work of the
   latest linked occurrence), the pending coalesced occurrence and, for ``buffer_all``, the
   buffered occurrences (``FOR UPDATE``); ``decide()``.
4. the disposition and the cursor move; the Work bridge for a nominal or recovery occurrence, or
   for the pending coalesced occurrence -- or the oldest buffered one -- once the slot is free
   (whatever ``decide()`` returned);
   completion of a spec without further instants; one history row; the dispatch row's next due
   time with the lease cleared and the revision bumped (a guarded write naming the lease).

Lock order, which keeps this deadlock-free against the API (definition, then dispatch) and the
terminal-Work trigger (Work row, then an *unleased* dispatch row): fences, definition, dispatch,
Work, occurrences. The trigger's dispatch update never waits for us: its ``WHERE`` requires
``lease_owner IS NULL`` and the committed row carries our lease.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from durable_schedule.barriers import (
    SCHEDULE_BRIDGE_BEFORE_COMMIT,
    SCHEDULE_DECISION_AFTER_COMMIT,
    SCHEDULE_DECISION_BEFORE_COMMIT,
    SCHEDULE_LINK_AFTER_COMMIT,
    barrier,
)
from durable_schedule.errors import (
    DurableError,
    InvalidQueue,
    ScheduleError,
    ScheduleLeaseLost,
    ScheduleNotFound,
    SchemaBelowFloor,
    UnevaluableGeneration,
    UnreadableStoredRow,
    alias_of,
)
from durable_schedule.evaluation import jitter as jittering
from durable_schedule.evaluation.decision import Decision
from durable_schedule.processor import lifecycle as hooks
from durable_schedule.processor.bridge import (
    STORED_TARGET,
    OccurrenceIdentity,
    bridge,
    link_conflict,
)
from durable_schedule.processor.dispatcher import Claim
from durable_schedule.processor.evaluate import evaluate_pass, generation_fence
from durable_schedule.schedules import records
from durable_schedule.schedules import validation as check
from durable_schedule.schedules.records import TERMINAL_WORK_STATES, Definition, Fences, iso, run
from durable_schedule.store.transactions import routed
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION


@dataclass(frozen=True)
class ScheduleOutcome:
    """What one pass did with one claimed schedule.

    ``action``: ``superseded`` (the claim moved on; nothing written), ``noop``, ``nominal``,
    ``recovery``, ``skipped``, ``coalesce`` or ``suspend``. ``work_id`` is set when Work was
    accepted (or an existing link returned) for ``materialized_kind``'s occurrence.
    """

    routing_id: int
    scope_id: str | None
    schedule_id: str
    action: str
    work_id: Any = None
    materialized_kind: str | None = None
    reason: str | None = None
    completed: bool = False
    first: datetime | None = None
    last: datetime | None = None
    detail: dict[str, Any] = field(default_factory=dict, compare=False)


log = logging.getLogger("durable_schedule.processor")

#: Suspension reason of a quarantined schedule (docs/protocol/runner.md rules R1-R3,
#: docs/protocol/runner.md rule R1).
QUARANTINE_REASON = "unevaluable"


def is_quarantinable(exc: BaseException) -> bool:
    """A stored row this code cannot evaluate (tampered or foreign spec, unknown kind or
    evaluator version, a stored policy that no longer validates) or whose stored target it
    cannot accept as Work: quarantine it, don't die."""
    if isinstance(exc, UnevaluableGeneration):
        return True
    if isinstance(exc, DurableError) and exc.context.get("phase") == "bridge" \
            and exc.context.get("refused") == STORED_TARGET:
        # The stored target no longer makes a Work request this code accepts (a payload over
        # the Work cap, DS250; one the codec refuses, DS209; a field that no longer
        # validates): the same refusal on every pass, so the schedule is quarantined.
        return True
    return isinstance(exc, ScheduleError) and exc.context.get("phase") == "evaluate"


def _still_claimed(cur, scope_id, claim: Claim, lease_owner: str, error: DurableError,
                   base: dict):
    """Re-lock a claimed schedule after its failed transaction rolled back: its fences, its
    definition and its dispatch lease. Returns ``(ctx, definition, None)`` when the claim still
    holds and the schedule is active, else ``(None, None, outcome)``: superseded (another
    runner's lease) or a no-op (no longer active; the claim is finished). Raises ``error``
    when the routing id no longer names a scope."""
    if scope_id is None:
        raise error
    fences = records.lock_fences(cur, scope_id)
    if isinstance(error, UnreadableStoredRow):
        # The row cannot be loaded whole (DS174): lock it reading only what a suspension
        # writes against (state, revision, generation).
        d = records.lock_definition_key(cur, scope_id, claim.schedule_id)
    else:
        d = records.lock_definition(cur, scope_id, claim.schedule_id)
    lease = run(cur, "lock_claimed_dispatch",
                {"routing_id": claim.routing_id, "schedule_id": claim.schedule_id}).fetchone()
    if lease is None or lease[0] != lease_owner or lease[1] != claim.dispatch_revision:
        return None, None, ScheduleOutcome(**base, action="superseded")
    ctx = _Ctx(cur, scope_id, claim, lease_owner, fences, d)
    if d is None or d.state != "active":
        ctx.finish_claim(None)
        return None, None, ScheduleOutcome(**base, action="noop")
    return ctx, d, None


def quarantine_claim(claim: Claim, lease_owner: str, error: DurableError, *,
                     using: str | None = None) -> ScheduleOutcome:
    """Suspend the claimed schedule with reason ``unevaluable`` and the error as evidence, in a
    fresh scoped transaction (the failed one rolled back), guarded by the claim like every
    other write; the pass then goes on with the other schedules (docs/protocol/runner.md)."""
    base = {"routing_id": claim.routing_id, "scope_id": None, "schedule_id": claim.schedule_id}
    with routed(claim.routing_id, using=using) as (cur, scope_id):
        base["scope_id"] = scope_id
        ctx, d, early = _still_claimed(cur, scope_id, claim, lease_owner, error, base)
        if early is not None:
            return early
        evidence = {
            "code": error.code, "message": error.message,
            "context": {k: _jsonable(v) for k, v in error.context.items()
                        if k not in ("pass_counts",)},
            "generation": d.generation, "cursor_utc": iso(d.cursor_utc),
            "checked_at": iso(ctx.now()),
        }
        ctx.suspend(QUARANTINE_REASON, evidence)
    log.warning("quarantined schedule %s/%s: %s", scope_id, claim.schedule_id, error,
                extra={"scope_id": scope_id, "schedule_id": claim.schedule_id,
                       "code": error.code, "reason": QUARANTINE_REASON})
    return ScheduleOutcome(**base, action="suspend", reason=QUARANTINE_REASON, detail=evidence)


#: The reason of a held schedule's outcome (not a suspension: nothing is written but the retry
#: time, and the schedule runs again by itself once its queue is listed).
HELD_REASON = "unlisted_queue"


def is_held(exc: BaseException) -> bool:
    """The claimed schedule's target names a queue ``DURABLE_SCHEDULE['QUEUES']`` does not list
    (DS244, raised by the bridge): a configuration state, not a failure of the pass."""
    return isinstance(exc, InvalidQueue) and exc.context.get("phase") == "bridge"


def hold_claim(claim: Claim, lease_owner: str, error: DurableError, retry_after: timedelta, *,
               using: str | None = None) -> ScheduleOutcome:
    """Leave a held schedule as it is -- cursor, occurrences and state untouched -- and make
    its dispatch row due again ``retry_after`` from now, the lease released, in a fresh scoped
    transaction guarded by the claim (the failed one rolled back). The schedule is looked at
    again once per ``retry_after`` (the pass's lease duration), so a runner neither fails nor
    spins on it, and it runs by itself once its queue is listed again (docs/operations.md
    "Held schedules")."""
    base = {"routing_id": claim.routing_id, "scope_id": None, "schedule_id": claim.schedule_id}
    with routed(claim.routing_id, using=using) as (cur, scope_id):
        base["scope_id"] = scope_id
        ctx, d, early = _still_claimed(cur, scope_id, claim, lease_owner, error, base)
        if early is not None:
            return early
        retry_at = ctx.now() + retry_after
        ctx.finish_claim(retry_at)
    detail = {"code": error.code, "queue": error.context.get("queue"),
              "retry_at": iso(retry_at), "generation": d.generation}
    log.warning("schedule %s/%s held: its target queue %r is not one of "
                "DURABLE_SCHEDULE['QUEUES'] (DS244); nothing materialized, looked at again at "
                "%s", scope_id, claim.schedule_id, detail["queue"], detail["retry_at"],
                extra={"scope_id": scope_id, "schedule_id": claim.schedule_id,
                       "code": error.code, "reason": HELD_REASON, "queue": detail["queue"]})
    return ScheduleOutcome(**base, action="held", reason=HELD_REASON, detail=detail)


def release_claims(claims: list[Claim], lease_owner: str, *, using: str | None = None) -> int:
    """Give back claims whose decision did not commit (a pass leaving on an interrupt): each
    dispatch row due again now, its lease cleared, in its own scoped transaction
    guarded by the claim, so a row whose decision did commit (its revision moved on) or that
    another runner holds is left alone. Returns how many were released."""
    released = 0
    for one in claims:
        with routed(one.routing_id, using=using) as (cur, scope_id):
            if scope_id is not None:
                run(cur, "release_claim", {
                    "routing_id": one.routing_id, "schedule_id": one.schedule_id,
                    "lease_owner": lease_owner, "dispatch_revision": one.dispatch_revision})
                released += cur.rowcount
    return released


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, datetime):
        return iso(value)
    return str(value)


@dataclass
class _Pending:
    id: int
    generation: int
    first: datetime
    last: datetime


@dataclass(frozen=True)
class _Buffered:
    """A buffered occurrence of ``buffer_all``: pending, not linked yet, waiting its turn."""

    id: int
    kind: str
    first: datetime


def process_claim(claim: Claim, lease_owner: str, *, using: str | None = None) -> ScheduleOutcome:
    """Run transaction 2 for one claim. Errors carry ``phase``, ``scope_id``, ``schedule_id``.

    A ``DurableError`` gets them in its ``context``; any other exception (a database error,
    which the runner may retry) is re-raised unchanged with a note naming them.
    """
    where: dict[str, Any] = {"phase": "route", "scope_id": None,
                             "schedule_id": claim.schedule_id, "routing_id": claim.routing_id}
    try:
        with routed(claim.routing_id, using=using) as (cur, scope_id):
            where["scope_id"] = scope_id
            if scope_id is None:
                raise ScheduleNotFound("no scope is visible behind the claimed routing id")
            outcome, work = _step(cur, scope_id, claim, lease_owner, where)
            if outcome.action != "superseded":
                barrier(SCHEDULE_BRIDGE_BEFORE_COMMIT if work else SCHEDULE_DECISION_BEFORE_COMMIT)
        if outcome.action != "superseded":
            barrier(SCHEDULE_LINK_AFTER_COMMIT if work else SCHEDULE_DECISION_AFTER_COMMIT)
        return outcome
    except DurableError as exc:
        for key, value in where.items():
            exc.context.setdefault(key, value)
        raise
    except Exception as exc:
        exc.add_note("durable_schedule: " + ", ".join(f"{k}={v!r}" for k, v in where.items()))
        raise


def _step(cur, scope_id: str, claim: Claim, owner: str,
          where: dict[str, Any]) -> tuple[ScheduleOutcome, bool]:
    schedule_id = claim.schedule_id
    base = {"routing_id": claim.routing_id, "scope_id": scope_id, "schedule_id": schedule_id}
    where["phase"] = "lock"
    fences = records.lock_fences(cur, scope_id)
    if fences.schema_version < REQUIRED_SCHEMA or fences.compatibility_floor > SCHEMA_VERSION:
        raise SchemaBelowFloor(f"database schema {fences.schema_version} (floor "
                               f"{fences.compatibility_floor}) does not fit this code "
                               f"(needs {REQUIRED_SCHEMA}, is {SCHEMA_VERSION})",
                               using=alias_of(cur))
    d = records.lock_definition(cur, scope_id, schedule_id)
    lease = run(cur, "lock_claimed_dispatch",
                {"routing_id": claim.routing_id, "schedule_id": schedule_id}).fetchone()
    if lease is None or lease[0] != owner or lease[1] != claim.dispatch_revision:
        return ScheduleOutcome(**base, action="superseded"), False
    ctx = _Ctx(cur, scope_id, claim, owner, fences, d)
    if d is None or d.state != "active":
        ctx.finish_claim(None)
        return ScheduleOutcome(**base, action="noop"), False

    where["phase"] = "fence"
    mismatch = _fence_mismatch(d, fences)
    if mismatch is not None:
        reason, evidence = mismatch
        evidence["checked_at"] = iso(ctx.now())
        ctx.suspend(reason, evidence)
        return ScheduleOutcome(**base, action="suspend", reason=reason, detail=evidence), False

    where["phase"] = "evaluate"
    spec = d.spec()  # an unevaluable generation is refused before any slot row is locked
    # A stored jitter not shorter than the target's deadline_after (stored before the commands
    # refused it, or tampered) would make Work due at or after its deadline: quarantined.
    check.jitter_within_deadline(d.jitter, d.target_json)
    # A stored jitter past 2**63 us (tampered) gives offsets the occurrence row cannot hold.
    jittering.check_range(d.jitter)
    changed = generation_fence(spec, d.cursor_utc)
    if changed is not None:
        reason, evidence = changed
        evidence["checked_at"] = iso(ctx.now())
        ctx.suspend(reason, evidence)
        return ScheduleOutcome(**base, action="suspend", reason=reason, detail=evidence), False
    cutoff = ctx.now()
    occupant = _lock_slot(cur, scope_id, schedule_id)
    if occupant is None:
        occupant = hooks.revived_occupant(cur, d)  # a backfilled run behind the latest one
    pending = _lock_pending(cur, scope_id, schedule_id, d.generation)
    buffered = _lock_buffered(cur, d)
    decision = evaluate_pass(d, cutoff, occupant, pending.last if pending else None, spec=spec,
                             lifecycle=lambda: hooks.decide_inputs(cur, d),
                             buffered=len(buffered))

    where["phase"] = "dispose"
    if decision.action == "suspend":
        ctx.suspend(decision.suspend_reason, dict(decision.evidence or {}))
        return ScheduleOutcome(**base, action="suspend", reason=decision.suspend_reason,
                               first=decision.first, last=decision.last,
                               detail=decision.evidence or {}), False
    to_bridge, pending = _dispose(ctx, decision, pending, buffered)
    moving = decision.new_cursor != d.cursor_utc
    if to_bridge is None and pending is not None and occupant is None:
        # The slot is free: the pending coalesced occurrence runs now, whatever decide() said.
        to_bridge = OccurrenceIdentity(scope_id, schedule_id, pending.generation, "coalesced",
                                       pending.first)
        pending = None
    if to_bridge is None and buffered and occupant is None:
        # buffer_all, the slot is free: the oldest buffered occurrence runs now (one per pass:
        # its Work takes the slot, and the terminal-Work trigger wakes the next one).
        oldest = buffered.pop(0)
        to_bridge = OccurrenceIdentity(scope_id, schedule_id, d.generation, oldest.kind,
                                       oldest.first)
    completed = decision.next_due is None and pending is None and not buffered
    if completed and moving:
        # The completion rewrites the definition row, so the cursor moves first, on its own.
        ctx.move_cursor(decision.new_cursor)
        moving = False

    where["phase"] = "bridge"
    bridged = None
    if to_bridge is not None:
        # Unless the schedule completes, the link is written by the closing statement below
        # (compare-or-return is unchanged: the bridge still decides, the guard still counts).
        bridged = bridge(cur, to_bridge, d.target_json, cutoff, write_link=completed,
                         due_at=_jittered_due(d, to_bridge))

    where["phase"] = "finish"
    if completed:
        ctx.complete()
    # A pending coalesced occurrence whose slot is free was bridged above, so the next due time
    # is the next nominal instant; while the slot is occupied, the terminal-Work trigger makes
    # the row due as soon as the occupying Work finishes.
    due = None if completed else decision.next_due
    detail = _detail(decision, bridged, to_bridge, pending, occupant, completed, due)
    if d.overlap == "buffer_all":
        detail["buffered"] = len(buffered)
    event = None
    if decision.action != "noop" or bridged is not None or completed:
        event = _event(decision, bridged, completed)
    ctx.finish_step(due, new_cursor=decision.new_cursor if moving else None, bridged=bridged,
                    identity=to_bridge, event=event, detail=detail, recorded_at=cutoff,
                    where=where)
    return ScheduleOutcome(
        **base, action=decision.action,
        work_id=bridged.link.work_id if bridged else None,
        materialized_kind=to_bridge.kind if to_bridge else None, completed=completed,
        first=decision.first, last=decision.last, detail=detail,
    ), bridged is not None


class _Ctx:
    """The writes of one step, each guarded by the state the step locked."""

    def __init__(self, cur, scope_id: str, claim: Claim, owner: str, fences: Fences,
                 d: Definition | None) -> None:
        self.cur, self.scope_id, self.claim, self.owner = cur, scope_id, claim, owner
        self.fences, self.d = fences, d

    def now(self) -> datetime:
        """The cutoff: the one ``durable_schedule_clock('clock')`` sample of this step, taken
        with the fence rows (inside this scoped transaction, before anything is decided)."""
        return self.fences.clock

    def _key(self) -> dict[str, Any]:
        return {"scope_id": self.scope_id, "schedule_id": self.claim.schedule_id}

    def finish_claim(self, due: datetime | None) -> None:
        run(self.cur, "finish_claim", {
            "routing_id": self.claim.routing_id, "schedule_id": self.claim.schedule_id,
            "lease_owner": self.owner, "dispatch_revision": self.claim.dispatch_revision,
            "due_at": due})
        if self.cur.rowcount != 1:
            raise ScheduleLeaseLost("the dispatch row no longer carries this claim")

    def finish_step(self, due: datetime | None, *, new_cursor: datetime | None, bridged,
                    identity: OccurrenceIdentity | None, event: str | None,
                    detail: dict[str, Any], recorded_at: datetime,
                    where: dict[str, Any]) -> None:
        """One statement closes the step: the cursor move (when ``new_cursor``), the Work link
        the bridge left to write (``bridged.link_row``), the dispatch row's next due time with
        the lease released, and the history row (when ``event``). Each guarded write is the
        statement it replaces, with the same ``WHERE``; each count is checked, in the order the
        separate statements ran, and a write that matched no row raises (rolling back all)."""
        link_row = None if bridged is None else bridged.link_row
        link = None if link_row is None else bridged.link
        row = run(self.cur, "finish_step", {
            **self._key(), "revision": self.d.revision, "old_cursor": self.d.cursor_utc,
            "new_cursor": new_cursor, "now": self.now(),
            "link_id": link_row, "work_id": None if link is None else link.work_id,
            "command": None if link is None else link.command,
            "idempotency_key": None if link is None else link.idempotency_key,
            "routing_id": self.claim.routing_id, "lease_owner": self.owner,
            "dispatch_revision": self.claim.dispatch_revision, "due_at": due,
            "generation": self.d.generation, "event": event, "actor": f"processor:{self.owner}",
            "detail": records.to_json(detail), "recorded_at": recorded_at}).fetchone()
        moved, linked, released = row
        if new_cursor is not None and moved != 1:
            where["phase"] = "dispose"
            raise RuntimeError("guarded cursor move matched no row under the definition lock")
        if link_row is not None and linked != 1:
            where["phase"] = "bridge"
            raise link_conflict(identity, link)
        if released != 1:
            raise ScheduleLeaseLost("the dispatch row no longer carries this claim")

    def suspend(self, reason: str, evidence: dict[str, Any]) -> None:
        now = self.now()
        row = run(self.cur, "suspend_definition", {
            **self._key(), "revision": self.d.revision, "reason": reason,
            "evidence": records.to_json(evidence), "now": now}).fetchone()
        if row is None:
            raise RuntimeError("guarded suspension matched no row under the definition lock")
        self.finish_claim(None)
        records.insert_history(self.cur, **self._key(), generation=self.d.generation,
                               event="suspended", actor=f"processor:{self.owner}",
                               detail={"reason": reason, "evidence": evidence,
                                       "revision": row[0]}, recorded_at=now)

    def move_cursor(self, new_cursor: datetime) -> None:
        run(self.cur, "move_cursor", {**self._key(), "revision": self.d.revision,
                                      "old_cursor": self.d.cursor_utc,
                                      "new_cursor": new_cursor, "now": self.now()})
        if self.cur.rowcount != 1:
            raise RuntimeError("guarded cursor move matched no row under the definition lock")

    def complete(self) -> None:
        row = run(self.cur, "finish_definition", {
            **self._key(), "revision": self.d.revision, "state": "completed",
            "from_states": ["active"], "now": self.now()}).fetchone()
        if row is None:
            raise RuntimeError("guarded completion matched no row under the definition lock")

    def insert_occurrence(self, kind: str, first: datetime, last: datetime,
                          state: str) -> tuple[int, str, str | None] | None:
        """Insert an occurrence identity: ``(id, current_user, scope setting)`` sampled by the
        insert (the bridge's runtime proof), or None when the identity already existed."""
        row = run(self.cur, "insert_occurrence", {
            **self._key(), "generation": self.d.generation, "kind": kind, "first": first,
            "last": last, "state": state, "now": self.now(),
            "jitter_us": hooks.jitter_offset(self.d, kind, first)}).fetchone()
        return None if row is None else row


def _fence_mismatch(d: Definition, fences: Fences) -> tuple[str, dict[str, Any]] | None:
    evidence = {
        "persisted_runtime_epoch": d.runtime_epoch, "store_runtime_epoch": fences.runtime_epoch,
        "persisted_scope_generation": d.scope_generation,
        "scope_generation": fences.scope_generation, "cursor_utc": iso(d.cursor_utc),
    }
    if d.runtime_epoch != fences.runtime_epoch:
        return "runtime_epoch_mismatch", evidence
    if d.scope_generation != fences.scope_generation:
        return "scope_generation_mismatch", evidence
    return None


def _lock_slot(cur, scope_id: str, schedule_id: str) -> Any:
    """The Work id occupying the schedule-wide slot, or None when the slot is free."""
    rows = run(cur, "lock_slot", {"scope_id": scope_id, "schedule_id": schedule_id}).fetchall()
    busy = [r[0] for r in rows if r[1] not in TERMINAL_WORK_STATES]
    return busy[0] if busy else None


def _lock_pending(cur, scope_id: str, schedule_id: str, generation: int) -> _Pending | None:
    row = run(cur, "lock_pending_coalesced",
              {"scope_id": scope_id, "schedule_id": schedule_id}).fetchone()
    if row is None:
        return None
    if row[1] != generation:
        # Update supersedes older generations' pending rows in its own transaction, so this is
        # stored state nobody should have written: refuse to run or absorb into it. The repair
        # (an update, which supersedes it) is the one for an unevaluable generation.
        raise UnevaluableGeneration(
            "a pending coalesced occurrence belongs to an older generation",
            reason="foreign_pending_occurrence", occurrence=row[0], generation=row[1],
            active_generation=generation)
    return _Pending(*row)


def _lock_buffered(cur, d: Definition) -> list[_Buffered]:
    """``buffer_all``: the active generation's buffered occurrences, oldest first (none is read
    for another policy: only buffer_all leaves nominal or recovery occurrences pending)."""
    if d.overlap != "buffer_all":
        return []
    rows = run(cur, "lock_buffered", {"scope_id": d.scope_id, "schedule_id": d.schedule_id,
                                      "generation": d.generation}).fetchall()
    return [_Buffered(*row) for row in rows]


def _dispose(ctx: _Ctx, decision: Decision, pending: _Pending | None,
             buffered: list[_Buffered]):
    """Write the occurrence disposition; returns (identity to bridge, pending coalesced).
    A ``buffer`` disposition is appended to ``buffered`` (the newest waits last)."""
    d = ctx.d
    action = decision.action
    if action == "buffer":
        kind = decision.occurrence_kind
        fresh = ctx.insert_occurrence(kind, decision.first, decision.last, "pending")
        if fresh is None:
            # The cursor moves past an instant exactly once, under the definition lock.
            raise RuntimeError("a buffered occurrence's identity existed already")
        buffered.append(_Buffered(fresh[0], kind, decision.first))
        return None, pending
    if action in ("nominal", "recovery"):
        fresh = ctx.insert_occurrence(action, decision.first, decision.last, "pending")
        return OccurrenceIdentity(ctx.scope_id, d.schedule_id, d.generation, action,
                                  decision.first, fresh_id=None if fresh is None else fresh[0],
                                  fresh_proof=None if fresh is None else fresh[1:]), pending
    if action == "skipped":
        ctx.insert_occurrence("recovery", decision.first, decision.last, "skipped")
        hooks.count_missed(ctx.cur, d, decision.skip_cause or "misfire", decision.count,
                           ctx.now())
    elif action == "coalesce":
        if pending is None:
            ctx.insert_occurrence("coalesced", decision.first, decision.last, "pending")
            pending = _Pending(0, d.generation, decision.first, decision.last)
        else:
            # Keep the identity (first); the last instant only moves forward
            # (docs/protocol/schedules.md).
            row = run(ctx.cur, "extend_coalesced", {
                "scope_id": ctx.scope_id, "id": pending.id, "last": decision.last,
                "now": ctx.now()}).fetchone()
            if row is None:
                raise RuntimeError("guarded coalesced extension matched no row")
            pending = _Pending(pending.id, pending.generation, pending.first, row[0])
    return None, pending


def _jittered_due(d: Definition, identity: OccurrenceIdentity) -> datetime | None:
    """The Work's due time: nominal + the identity's jitter offset (None: due at once)."""
    offset = hooks.jitter_offset(d, identity.kind, identity.first_nominal_utc)
    return None if offset is None else jittering.due_at(identity.first_nominal_utc, offset)


def _event(decision: Decision, bridged, completed: bool) -> str:
    if bridged is not None:
        return "materialized"
    if decision.action == "coalesce":
        return "coalesced"
    if decision.action == "buffer":
        return "buffered"
    if decision.action == "skipped":
        return "skipped"
    return "completed" if completed else decision.action


def _detail(decision: Decision, bridged, to_bridge, pending, occupant, completed, due):
    detail: dict[str, Any] = {
        "action": decision.action, "first": iso(decision.first), "last": iso(decision.last),
        "count": decision.count, "cursor_utc": iso(decision.new_cursor),
        "next_due": iso(due), "completed": completed,
        "slot_work_id": None if occupant is None else str(occupant),
    }
    if decision.skip_cause is not None:
        detail["skip_cause"] = decision.skip_cause
    if decision.evidence and "local" in decision.evidence:
        # Cron: wall time and fold of first/last; the count is "at least" when not exact.
        detail["local"] = decision.evidence["local"]
        detail["count_exact"] = decision.evidence["count_exact"]
    if to_bridge is not None:
        detail["occurrence"] = {"kind": to_bridge.kind, "first": to_bridge.first_iso}
    if bridged is not None:
        link = bridged.link  # link.as_dict() and "created", as one dict
        detail["link"] = {"work_id": link.work_id_str(), "command": link.command,
                          "idempotency_key": link.idempotency_key, "created": bridged.created}
    if pending is not None:
        detail["pending_coalesced"] = {"first": iso(pending.first), "last": iso(pending.last)}
    return detail
