"""Operator lifecycle commands: pause, resume and run now (docs/schedules.md "Pause and
resume", "Run now").

They follow the rules of every schedule command (``schedules/api.py``): arguments validated
before any write, the scoped transaction form nested in the caller's ``transaction.atomic()``,
the fence rows read ``FOR SHARE`` and the definition locked ``FOR UPDATE`` before deciding, one
history row naming the actor, and a re-armed dispatch row (revision bumped, so a claim taken
before the change writes nothing).

Pause is an operator state, not a protocol suspension: it has its own state (``paused``) and
columns (who, when, the note), its dispatch row is disarmed (``due_at`` NULL, so the claim never
sees it), and resume keeps the generation -- its anchor, grid, bounds and policies -- exactly as
it was. Neither command reads the target, so neither needs the target's code to be imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from durable_schedule.barriers import (
    SCHEDULE_BRIDGE_BEFORE_COMMIT,
    SCHEDULE_LINK_AFTER_COMMIT,
    barrier,
)
from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import (
    InvalidArgument,
    InvalidCatchUp,
    ScheduleDeleted,
    ScheduleNotFound,
    ScheduleNotPausable,
    ScheduleNotPaused,
    ScheduleNotTriggerable,
    TriggerSlotBusy,
)
from durable_schedule.evaluation import bounds as bounding
from durable_schedule.evaluation import overlap as overlapping
from durable_schedule.evaluation.timeline import counted_to_the_end, instants_in
from durable_schedule.processor import lifecycle as hooks
from durable_schedule.processor.bridge import OccurrenceIdentity, bridge
from durable_schedule.schedules import records
from durable_schedule.schedules import validation as check
from durable_schedule.schedules.api import _guarded, _history, _locked, _reread
from durable_schedule.schedules.info import ScheduleInfo, from_definition
from durable_schedule.schedules.records import TERMINAL_WORK_STATES, run
from durable_schedule.store.transactions import scoped, validate_scope_id

CATCH_UP = ("misfire_policy", "skip")
#: The missed-instant cause of instants skipped at resume (catch_up="skip").
PAUSED_CAUSE = "paused"
_ONE_US = timedelta(microseconds=1)


def _article(state: str) -> str:
    """"an" before a state that starts with a vowel (an active schedule), "a" otherwise."""
    return "an" if state[:1] in "aeiou" else "a"


@scope_optional
def pause(scope: str, schedule_id: str, note: str = "", actor: str = "", *,
          expected_revision: int | None = None) -> ScheduleInfo:
    """Pause an active schedule: no instant is evaluated until ``resume``.

    Accepted Work keeps running; a pending coalesced occurrence stays pending. Pausing a paused
    schedule returns it unchanged; any other state raises ``ScheduleNotPausable`` (DS146).
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    note = check.reason(note, "note") if note != "" else ""
    actor = check.actor(actor)
    expected_revision = check.revision(expected_revision, optional=True)
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        fences = records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, expected_revision)
        if d.state == "paused":
            return from_definition(scope, d)
        if d.state != "active":
            raise ScheduleNotPausable(f"{_article(d.state)} {d.state} schedule cannot be paused",
                                      schedule_id=schedule_id, state=d.state,
                                      reason=d.suspension_reason)
        revision = _guarded(hooks.run_lifecycle(cur, "pause_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "revision": d.revision,
            "now": now, "actor": actor, "note": note}).fetchone(), "pause", schedule_id)
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=None)
        _history(cur, scope, schedule_id, d.generation, "paused", actor, now, revision=revision,
                 note=note, cursor_utc=records.iso(d.cursor_utc))
        return _reread(cur, scope, schedule_id)


@scope_optional
def resume(scope: str, schedule_id: str, actor: str = "", *,
           catch_up: str = "misfire_policy",
           expected_revision: int | None = None) -> ScheduleInfo:
    """Resume a paused schedule on its generation's own grid (no re-anchoring).

    ``catch_up="misfire_policy"`` (default): the instants that fell while paused are handled by
    the next pass under the generation's misfire policy (``run_once``: one recovery run;
    ``skip``: skipped and counted), their lateness measured from this resume, so a long pause
    is never taken for a clock jump. ``catch_up="skip"``: they are skipped here, the cursor
    moves to the last of them and ``missed["paused"]`` counts them. Raises
    ``ScheduleNotPaused`` (DS147), ``InvalidCatchUp`` (DS152).
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    actor = check.actor(actor)
    expected_revision = check.revision(expected_revision, optional=True)
    if not isinstance(catch_up, str) or catch_up not in CATCH_UP:
        raise InvalidCatchUp("unknown catch_up", field="catch_up", got=repr(catch_up)[:80])
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        fences = records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, expected_revision)
        if d.state != "paused":
            raise ScheduleNotPaused(f"{_article(d.state)} {d.state} schedule is not paused",
                                    schedule_id=schedule_id, state=d.state)
        cursor, skipped = d.cursor_utc, None
        if catch_up == "skip":
            spec = d.spec()
            skipped = instants_in(spec, d.accepted_at_utc, d.cursor_utc,
                                  bounding.clip(now, hooks.bounds_of(d)))
            if skipped is not None:
                skipped = counted_to_the_end(spec, skipped)  # every skipped instant counts
                cursor = skipped.last
        count = 0 if skipped is None else skipped.count
        missed = {}
        if count:
            missed[PAUSED_CAUSE] = int((d.missed or {}).get(PAUSED_CAUSE, 0)) + count
        revision = _guarded(hooks.run_lifecycle(cur, "resume_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "revision": d.revision,
            "now": now, "cursor": cursor, "missed": records.to_json(missed)}).fetchone(),
            "resume", schedule_id)
        # Due at once: the next pass evaluates (cursor, cutoff] under the usual rules and
        # computes the next due time (or completes a schedule whose bounds ran out meanwhile).
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=now)
        _history(cur, scope, schedule_id, d.generation, "resumed", actor, now,
                 revision=revision, catch_up=catch_up, paused_at=records.iso(d.paused_at),
                 paused_by=d.paused_by, note=d.pause_note, cursor_utc=records.iso(cursor),
                 skipped=None if skipped is None else {
                     "first": records.iso(skipped.first), "last": records.iso(skipped.last),
                     "count": skipped.count})
        return _reread(cur, scope, schedule_id)


@dataclass(frozen=True)
class Triggered:
    """What ``trigger`` did: the manual occurrence and its Work. ``created`` is False when the
    request id had been used before (the stored occurrence and Work are returned)."""

    schedule: ScheduleInfo
    request_id: str
    occurrence_first_utc: datetime
    work_id: Any
    created: bool


def _request_id(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidArgument("request_id must be a string", field="request_id",
                              got=type(value).__name__)
    return check.identifier(value, "request_id")


@scope_optional
def trigger(scope: str, schedule_id: str, request_id: str, actor: str = "") -> Triggered:
    """Run the schedule now: a ``manual`` occurrence and its Work, identified by ``request_id``.

    Idempotent: the same request id returns the same occurrence and Work (``created`` False),
    whatever happened since (a later pause, suspension, completion or delete included). The
    cursor does not move and ``max_runs`` does not count it. The overlap policy holds: with
    ``queue_one``, ``skip`` or ``buffer_all`` a run while the schedule's Work still holds the
    slot -- or while a ``queue_one`` coalesced or ``buffer_all`` buffered occurrence waits to
    run first -- is refused with ``TriggerSlotBusy`` (DS150, nothing written: retry with the
    same request id);
    ``allow_all`` always runs. Active and paused schedules can be triggered with a new request
    id; others raise ``ScheduleNotTriggerable`` (DS151), a deleted one ``ScheduleDeleted``
    (DS107).
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    request_id = _request_id(request_id)
    actor = check.actor(actor)
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        records.lock_fences(cur, scope)
        d = records.lock_definition(cur, scope, schedule_id)
        if d is None:
            raise ScheduleNotFound("no such schedule in this scope", schedule_id=schedule_id)
        key = {"scope_id": scope, "schedule_id": schedule_id}
        found = hooks.run_lifecycle(cur, "find_manual",
                                    {**key, "request_id": request_id}).fetchone()
        if found is not None:
            # Compare-or-return before any state check: a retry whose first answer was lost
            # learns what its request did, whatever happened to the schedule since (a delete
            # included), instead of an error that hides a run that took place.
            return Triggered(from_definition(scope, d), request_id, found[2], found[4], False)
        if d.state == "deleted":
            raise ScheduleDeleted("the schedule was deleted", schedule_id=schedule_id,
                                  revision=d.revision)
        if d.state not in ("active", "paused"):
            raise ScheduleNotTriggerable(f"{_article(d.state)} {d.state} schedule cannot be "
                                         "run now",
                                         schedule_id=schedule_id, state=d.state,
                                         reason=d.suspension_reason)
        slot = run(cur, "lock_slot", key).fetchall()
        busy = [r[0] for r in slot if r[1] not in TERMINAL_WORK_STATES]
        if not busy:  # a backfilled run behind the latest linked occurrence holds it too
            busy = [w for w in (hooks.revived_occupant(cur, d),) if w is not None]
        waiting = hooks.buffered_count(cur, d)
        coalesced = hooks.coalesced_count(cur, d)
        if not overlapping.trigger_allowed(d.overlap, occupied=bool(busy), buffered=waiting,
                                           coalesced=coalesced):
            # buffer_all: buffered instants run first, in order; queue_one: the pending
            # coalesced occurrence does (a free slot beside it: paused, or its pass not run
            # yet). A manual run before them would overtake them.
            raise TriggerSlotBusy("the schedule's previous Work still runs" if busy else
                                  "buffered instants wait to run first" if waiting else
                                  "a coalesced occurrence waits to run first",
                                  schedule_id=schedule_id, overlap=d.overlap,
                                  slot_work_id=str(busy[0]) if busy else None,
                                  buffered=waiting, coalesced=coalesced)
        latest = hooks.run_lifecycle(cur, "latest_manual",
                                     {**key, "generation": d.generation}).fetchone()
        first = now if latest[0] is None or latest[0] < now else latest[0] + _ONE_US
        row = hooks.run_lifecycle(cur, "insert_manual", {
            **key, "generation": d.generation, "at": first, "state": "pending",
            "request_id": request_id}).fetchone()
        identity = OccurrenceIdentity(scope, schedule_id, d.generation, "manual", first,
                                      fresh_id=row[0], fresh_proof=row[1:])
        bridged = bridge(cur, identity, d.target_json, now)
        _history(cur, scope, schedule_id, d.generation, "triggered", actor, now,
                 request_id=request_id, occurrence={"kind": "manual", "first": records.iso(first)},
                 link=bridged.link.as_dict(), cursor_utc=records.iso(d.cursor_utc))
        result = Triggered(_reread(cur, scope, schedule_id), request_id, first,
                           bridged.link.work_id, True)
        barrier(SCHEDULE_BRIDGE_BEFORE_COMMIT)
    barrier(SCHEDULE_LINK_AFTER_COMMIT)
    return result
