"""The schedule commands and reads (docs/protocol/schedules.md rules S2, S5 and S6).

Every function validates its arguments first (nothing is written for bad input), then runs in
the scoped transaction form (``store.transactions.scoped``): as ``durable_runtime``, with the
transaction-local scope set, nested in the caller's ``transaction.atomic()`` when there is one
(the schedule change commits with the caller's transaction, or not at all). Each command:

* captures ``accepted_at_utc`` / its timestamp from ``durable_schedule_clock('transaction')``
  (PostgreSQL's ``transaction_timestamp()``; never a Python clock);
* reads the fence rows (store epoch, scope generation) ``FOR SHARE`` and locks the definition
  ``FOR UPDATE`` before deciding;
* writes one schedule history row naming the actor, and re-arms the dispatch row: due time =
  the next nominal instant (``NULL`` when nothing is due), lease cleared, ``dispatch_revision``
  bumped, so a dispatcher claim taken before the change becomes a no-op for the processor.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import (
    DurableError,
    InvalidArgument,
    PayloadNotEncodable,
    ReleaseRefused,
    RevisionMismatch,
    ScheduleAlreadyExists,
    ScheduleDeleted,
    ScheduleNeverFires,
    ScheduleNotFound,
    ScheduleNotSuspendable,
    ScheduleNotSuspended,
    UnknownWorkTarget,
)
from durable_schedule.evaluation import bounds as bounding
from durable_schedule.evaluation import jitter as jittering
from durable_schedule.evaluation.bounds import Bounds
from durable_schedule.evaluation.policy import MAX_INSTANT, checked_add
from durable_schedule.evaluation.timeline import (
    ScheduleSpec,
    bind_spec,
    counted_to_the_end,
    evaluator_version_of,
    instants_in,
    kind_of,
    next_instant_after,
    spec_to_json,
)
from durable_schedule.schedules import records
from durable_schedule.schedules import validation as check
from durable_schedule.schedules.info import ScheduleInfo, from_definition
from durable_schedule.schedules.records import Definition, run
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import scoped, validate_scope_id
from durable_schedule.work.target import WorkTarget

STATES = ("active", "suspended", "paused", "deleted", "completed")
#: The reason ``suspend()`` records; ``release_after_recovery`` does not clear it (use update).
OPERATOR_REASON = "operator"
#: The only suspension ``release_after_recovery`` clears (docs/protocol/schedules.md "Clock and
#: evaluator fences").
RELEASABLE_REASON = "runtime_epoch_mismatch"


_ONE_US = timedelta(microseconds=1)

#: update(): "keep the active generation's value" for the nullable lifecycle facts.
_KEEP: Any = object()


# ---------------------------------------------------------------- helpers
def _first_due(spec: ScheduleSpec, accepted_at: datetime, cursor: datetime,
               bounds: Bounds = bounding.NONE) -> datetime:
    """The first nominal instant after the cursor; a spec without one is refused (DS117)."""
    due = bounding.within(next_instant_after(spec, accepted_at, cursor), bounds)
    if due is None:
        raise ScheduleNeverFires(
            "the schedule has no nominal instant after its acceptance time",
            kind=kind_of(spec), accepted_at_utc=records.iso(accepted_at),
            cursor_utc=records.iso(cursor))
    return due


def _runs_left(cur, d: Definition, bounds: Bounds) -> None:
    """DS117 when ``max_runs`` leaves the new generation no run: it counts the runs of every
    generation (the pending occurrences this update supersedes no longer among them), so the
    generation could never run (like an ``end_at`` in the past)."""
    if bounds.max_runs is None:
        return
    from durable_schedule.processor import lifecycle as hooks  # imports this package

    runs = hooks.run_lifecycle(cur, "count_runs", {"scope_id": d.scope_id,
                                                   "schedule_id": d.schedule_id}).fetchone()[0]
    if bounding.runs_left(bounds, runs) == 0:
        raise ScheduleNeverFires(
            f"max_runs {bounds.max_runs} leaves no run: the schedule has run {runs} times "
            "(every generation counts); raise max_runs or remove it",
            schedule_id=d.schedule_id, max_runs=bounds.max_runs, runs=runs)


def _deadline_fits(target_json: dict[str, Any], due: datetime) -> None:
    """DS215 when the target's relative deadline, counted from the first due instant, leaves
    the supported UTC range: the processor counts it from the materialization (at or after
    ``due``), and a sum it cannot form would fail that schedule's every pass instead."""
    after_us = target_json.get("deadline_after_us")
    if after_us is None:
        return
    try:
        after = timedelta(microseconds=after_us)
    except OverflowError:
        after = timedelta.max
    checked_add(due, after, "the target's deadline (first due instant + deadline_after)")


def _jitter_fits(jitter: timedelta | None, due: datetime) -> None:
    """DS149 when the first due instant's Work, delayed by up to the jitter, would be due past
    the supported UTC range: an ``At`` or ``After`` has no next instant to bound its jitter,
    and the processor could neither store nor add such an offset (every pass would fail)."""
    if jitter is not None and jitter - _ONE_US > MAX_INSTANT - due:
        raise jittering.InvalidJitter(
            "jitter would put the Work's due time past the supported UTC range",
            field="jitter", value=str(jitter), due_at=records.iso(due))


def _locked(cur, scope: str, schedule_id: str, expected_revision: int | None) -> Definition:
    """The definition FOR UPDATE; missing, deleted or a revision mismatch raise."""
    d = records.lock_definition(cur, scope, schedule_id)
    if d is None:
        raise ScheduleNotFound("no such schedule in this scope", schedule_id=schedule_id)
    if d.state == "deleted":
        raise ScheduleDeleted("the schedule was deleted", schedule_id=schedule_id,
                              revision=d.revision)
    if expected_revision is not None and expected_revision != d.revision:
        raise RevisionMismatch(f"expected revision {expected_revision}, found {d.revision}",
                               schedule_id=schedule_id, revision=d.revision)
    return d


def _history(cur, scope: str, schedule_id: str, generation: int | None, event: str, actor: str,
             at: datetime, **detail: Any) -> None:
    records.insert_history(cur, scope_id=scope, schedule_id=schedule_id, generation=generation,
                           event=event, actor=actor, detail=detail, recorded_at=at)


def _reread(cur, scope: str, schedule_id: str) -> ScheduleInfo:
    return from_definition(scope, records.read_definition(cur, scope, schedule_id))


def _guarded(row, what: str, schedule_id: str) -> int:
    # The definition is locked FOR UPDATE, so a guard that misses is a defect, not a race.
    if row is None:
        raise RuntimeError(f"guarded {what} of schedule {schedule_id!r} matched no row")
    return row[0]


# ---------------------------------------------------------------- commands
@scope_optional
def create(
    scope: str,
    schedule_id: str,
    spec: ScheduleSpec,
    target: Any,
    *,
    overlap: str = "queue_one",
    misfire: str = "run_once",
    safety_window: timedelta | None = None,
    actor: str = "",
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    max_runs: int | None = None,
    jitter: timedelta | None = None,
    buffer_limit: int | None = None,
) -> ScheduleInfo:
    """Create schedule ``schedule_id`` in ``scope`` with generation 1.

    ``spec``: ``At(when)``, ``After(delay)``, ``Every(interval, anchor=None)`` or
    ``Cron(expression, tz="UTC", dst_gap="shift", dst_fold="first")``. ``target``:
    ``definition.target(payload=...)`` of registered Work. ``overlap``: ``"queue_one"``.
    ``misfire``: ``"run_once"`` (default) or ``"skip"``. ``safety_window``: how late the
    earliest missed instant may be before the schedule suspends instead of running (default
    ``DURABLE_SCHEDULE['SAFETY_WINDOW']``). Raises ``ScheduleAlreadyExists`` (DS109),
    ``ScheduleDeleted`` (DS107: deletion is terminal for an identity) and ``ScheduleNeverFires``
    (DS117: e.g. an ``At`` instant at or before the acceptance time).

    Lifecycle (docs/schedules.md "Bounds and limits", "Jitter", "Overlap policies"):
    ``start_at`` / ``end_at`` (inclusive) bound the instants, ``max_runs`` ends the schedule
    after that many scheduled runs, ``jitter`` delays each nominal instant's Work by a
    deterministic offset below it; ``overlap`` is ``queue_one``, ``skip``, ``buffer_all`` or
    ``allow_all``; ``buffer_limit`` bounds a ``buffer_all`` buffer (default 100, 1-1000,
    DS154 otherwise or with another policy).
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    spec = check.spec(spec)
    target_json = check.target(target, scope)
    overlap, misfire = check.policies(overlap, misfire)
    buffer_limit = check.buffer_limit(overlap, buffer_limit)
    window = check.safety_window(safety_window)
    actor = check.actor(actor)
    bounds = Bounds(start_at=start_at, end_at=end_at, max_runs=max_runs)
    jittering.validate(jitter, None)  # type and sign before the database; the gap needs its time
    with scoped(scope) as cur:
        accepted = records.transaction_clock(cur)
        # A Cron's gaps are read in the year after the acceptance: the database clock, like
        # every instant of the schedule (a refusal rolls the transaction back, nothing written).
        jitter = _jitter(jitter, spec, target_json, (scope, schedule_id), accepted)
        spec = bind_spec(spec, scope, schedule_id, accepted)
        cursor = bounding.initial_cursor(accepted, accepted, bounds)
        due = _first_due(spec, accepted, cursor, bounds)
        _deadline_fits(target_json, due)
        _jitter_fits(jitter, due)
        fences = records.lock_fences(cur, scope)
        existing = records.lock_definition(cur, scope, schedule_id)
        if existing is not None and existing.state == "deleted":
            raise ScheduleDeleted("the schedule identity was deleted", schedule_id=schedule_id)
        inserted = None if existing is not None else run(cur, "insert_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "accepted_at": accepted,
            "runtime_epoch": fences.runtime_epoch, "scope_generation": fences.scope_generation,
        }).fetchone()
        if inserted is None:
            raise ScheduleAlreadyExists("the schedule exists", schedule_id=schedule_id)
        if cursor != accepted:
            # start_at lies ahead: the cursor starts just before it (evaluation/bounds.py).
            run(cur, "move_cursor", {"scope_id": scope, "schedule_id": schedule_id,
                                     "revision": 1, "old_cursor": accepted,
                                     "new_cursor": cursor, "now": accepted})
        _insert_generation(cur, scope, schedule_id, 1, spec, accepted, target_json, overlap,
                           misfire, window, actor, bounds, jitter, buffer_limit)
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=due)
        _history(cur, scope, schedule_id, 1, "created", actor, accepted, revision=1,
                 kind=kind_of(spec), spec=spec_to_json(spec), overlap=overlap, misfire=misfire,
                 safety_window_us=window // timedelta(microseconds=1),
                 accepted_at_utc=records.iso(accepted), due_at=records.iso(due),
                 **_lifecycle_detail(bounds, jitter, buffer_limit))
        return _reread(cur, scope, schedule_id)


def _insert_generation(cur, scope, schedule_id, generation, spec, accepted, target_json,
                       overlap, misfire, window, actor, bounds: Bounds,
                       jitter: timedelta | None, buffer_limit: int | None) -> None:
    run(cur, "insert_generation", {
        "scope_id": scope, "schedule_id": schedule_id, "generation": generation,
        "kind": kind_of(spec), "spec": records.to_json(spec_to_json(spec)),
        "accepted_at": accepted, "target": records.to_json(target_json), "overlap": overlap,
        "misfire": misfire, "safety_window": window,
        "evaluator_version": evaluator_version_of(spec), "actor": actor,
        "start_at": bounds.start_at, "end_at": bounds.end_at, "max_runs": bounds.max_runs,
        "jitter": jitter, "buffer_limit": buffer_limit,
    })


def _jitter(jitter: Any, spec: ScheduleSpec, target_json: dict[str, Any],
            identity: tuple[str, str], start: datetime | None) -> timedelta | None:
    """The checked jitter; ``start``: the transaction time a Cron's gaps are read from (None
    only for ``declare``, at import time without a database; see ``jittering.validate``)."""
    jitter = jittering.validate(jitter, spec, identity, start)
    check.jitter_within_deadline(jitter, target_json)
    policy = target_json.get("policy") if isinstance(target_json, dict) else None
    if jitter is not None and isinstance(policy, dict) and policy.get("plan") is not None:
        # A planned Work's slots are acceptance-relative and refuse a due time (DS208).
        raise jittering.InvalidJitter("jitter cannot delay a target with an attempt plan",
                                      field="jitter")
    return jitter


def _lifecycle_detail(bounds: Bounds, jitter: timedelta | None,
                      buffer_limit: int | None = None) -> dict[str, Any]:
    """The lifecycle facts of a generation for its history row (only those that are set)."""
    out: dict[str, Any] = {}
    if bounds.start_at is not None:
        out["start_at"] = records.iso(bounds.start_at)
    if bounds.end_at is not None:
        out["end_at"] = records.iso(bounds.end_at)
    if bounds.max_runs is not None:
        out["max_runs"] = bounds.max_runs
    if jitter is not None:
        out["jitter_us"] = jitter // timedelta(microseconds=1)
    if buffer_limit is not None:
        out["buffer_limit"] = buffer_limit
    return out



@scope_optional
def update(
    scope: str,
    schedule_id: str,
    *,
    expected_revision: int,
    spec: ScheduleSpec | None = None,
    target: Any = None,
    overlap: str | None = None,
    misfire: str | None = None,
    safety_window: timedelta | None = None,
    actor: str = "",
    start_at: Any = _KEEP,
    end_at: Any = _KEEP,
    max_runs: Any = _KEEP,
    jitter: Any = _KEEP,
    buffer_limit: Any = _KEEP,
) -> ScheduleInfo:
    """Create the next generation of an active, suspended, paused or completed schedule.

    Arguments left ``None`` keep the active generation's value; a target snapshot is never
    rewritten, the new generation gets its own. The new generation has its own
    ``accepted_at_utc``; the cursor restarts there (or stays, if it is already later), so
    nothing before the update is back-filled. Pending (unstarted) occurrences of older
    generations are superseded; accepted Work of older generations keeps running and keeps the
    slot. The fences are rebound and any suspension is cleared: this is the repair for clock,
    evaluator and scope-generation suspensions. A paused schedule stays paused (resume it with
    ``resume``). ``start_at``, ``end_at``, ``max_runs`` and ``jitter`` left out keep the
    active generation's value; ``None`` removes it. ``max_runs`` counts the runs of every
    generation (docs/schedules.md "Bounds and limits"). ``buffer_limit`` left out keeps a
    ``buffer_all`` generation's bound (the default 100 when the policy becomes ``buffer_all``);
    buffered occurrences of older generations are superseded like any pending one. Raises
    ``RevisionMismatch`` (DS106),
    ``ScheduleDeleted`` (DS107), ``ScheduleNotFound`` (DS108), ``ScheduleNeverFires`` (DS117).
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    expected_revision = check.revision(expected_revision)
    spec = None if spec is None else check.spec(spec)
    target_json = None if target is None else check.target(target, scope)
    if overlap is not None or misfire is not None:
        check.policies("queue_one" if overlap is None else overlap,
                       "run_once" if misfire is None else misfire)
    if overlap is not None and buffer_limit is not _KEEP:
        check.buffer_limit(overlap, buffer_limit)  # refused before the transaction when it can be
    window = None if safety_window is None else check.safety_window(safety_window)
    actor = check.actor(actor)
    # The given bounds and jitter on their own, before the database (DS148, DS149); what
    # depends on the kept values or the spec (start_at <= a kept end_at, the jitter's gap) is
    # checked again with them in the transaction.
    Bounds(start_at=None if start_at is _KEEP else start_at,
           end_at=None if end_at is _KEEP else end_at,
           max_runs=None if max_runs is _KEEP else max_runs)
    if jitter is not _KEEP:
        jittering.validate(jitter, None)
    with scoped(scope) as cur:
        accepted = records.transaction_clock(cur)
        fences = records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, expected_revision)
        if spec is None:
            spec = d.spec()  # DS114 when the stored spec is unreadable: pass a new spec
        # A cron generation re-binds its seed and takes the rules in force now (the repair of
        # a tz_rules_changed suspension is exactly this).
        spec = bind_spec(spec, scope, schedule_id, accepted)
        if target_json is None:
            target_json = _stored_target(d)
        overlap, misfire = check.policies(d.overlap if overlap is None else overlap,
                                          d.misfire if misfire is None else misfire)
        if buffer_limit is _KEEP:
            buffer_limit = d.buffer_limit if overlap == "buffer_all" == d.overlap else None
        buffer_limit = check.buffer_limit(overlap, buffer_limit)
        window = window if window is not None else check.safety_window(d.safety_window)
        bounds = Bounds(start_at=d.start_at if start_at is _KEEP else start_at,
                        end_at=d.end_at if end_at is _KEEP else end_at,
                        max_runs=d.max_runs if max_runs is _KEEP else max_runs)
        new_jitter = _jitter(d.jitter if jitter is _KEEP else jitter, spec, target_json,
                             (scope, schedule_id), accepted)
        cursor = bounding.initial_cursor(accepted, d.cursor_utc, bounds)
        due = _first_due(spec, accepted, cursor, bounds)
        _deadline_fits(target_json, due)
        _jitter_fits(new_jitter, due)
        generation = d.generation + 1
        dropped = _superseded_instants(d, accepted)
        retired = run(cur, "retire_pending", {
            "scope_id": scope, "schedule_id": schedule_id, "state": "superseded",
            "below_generation": generation, "now": accepted}).fetchall()
        # After the retirement: a superseded pending occurrence no longer counts as a run. A
        # refusal here rolls the retirement back with the rest of the transaction.
        _runs_left(cur, d, bounds)
        _insert_generation(cur, scope, schedule_id, generation, spec, accepted, target_json,
                           overlap, misfire, window, actor, bounds, new_jitter, buffer_limit)
        revision = _guarded(run(cur, "rebind_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "revision": d.revision,
            "generation": generation, "runtime_epoch": fences.runtime_epoch,
            "scope_generation": fences.scope_generation, "cursor": cursor, "now": accepted,
        }).fetchone(), "update", schedule_id)
        superseded = (0 if dropped is None else dropped.count) + _pending_instants(d, retired)
        if superseded:
            _count_missed(cur, d, SUPERSEDED_CAUSE, superseded, accepted)
        # A paused schedule keeps its dispatch row disarmed (docs/schedules.md "Pause").
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=None if d.state == "paused" else due)
        _history(cur, scope, schedule_id, generation, "updated", actor, accepted,
                 revision=revision, previous_state=d.state, kind=kind_of(spec),
                 spec=spec_to_json(spec), overlap=overlap, misfire=misfire,
                 safety_window_us=window // timedelta(microseconds=1),
                 accepted_at_utc=records.iso(accepted), cursor_utc=records.iso(cursor),
                 due_at=records.iso(due), superseded=[_retired(r) for r in retired],
                 cleared_suspension=d.suspension_reason,
                 not_evaluated=None if dropped is None else {
                     "first": records.iso(dropped.first), "last": records.iso(dropped.last),
                     "count": dropped.count},
                 **_lifecycle_detail(bounds, new_jitter, buffer_limit))
        return _reread(cur, scope, schedule_id)


#: The missed-instant cause of the instants an update leaves unevaluated (docs/schedules.md
#: "Missed instants").
SUPERSEDED_CAUSE = "superseded"


def _superseded_instants(d: Definition, accepted: datetime):
    """The replaced generation's instants in ``(cursor, accepted]`` that no pass evaluated (a
    suspension, a pause, processors behind): the new generation starts at ``accepted`` and
    nothing is back-filled, so they never run, and every skipped instant is counted. None when
    there are none, when the schedule had completed (no instant is left to it), or when the
    stored spec cannot be read back (the update that repairs it cannot count its instants)."""
    if d.state not in ("active", "paused", "suspended"):
        return None
    try:
        spec = d.spec()
        window = instants_in(spec, d.accepted_at_utc, d.cursor_utc,
                             bounding.clip(accepted, Bounds(start_at=d.start_at,
                                                            end_at=d.end_at,
                                                            max_runs=d.max_runs)))
        return None if window is None else counted_to_the_end(spec, window)
    except (DurableError, ValueError, OverflowError):
        return None


def _pending_instants(d: Definition, retired: list[tuple]) -> int:
    """The instants of the pending occurrences an update supersedes (``retire_pending`` rows:
    a ``queue_one`` coalesced occurrence waiting for the slot, ``buffer_all``'s buffered ones).
    A pass evaluated them, so they are not in ``_superseded_instants``; they never run either
    (the new generation starts after them), and every skipped instant is counted. Nothing is
    counted when the stored spec cannot be read back (as for ``_superseded_instants``)."""
    ranges = [(first, last) for _id, generation, kind, first, last in retired
              if generation == d.generation and kind != "manual"]
    if not ranges:
        return 0
    try:
        spec = d.spec()
        total = 0
        for first, last in ranges:
            found = instants_in(spec, d.accepted_at_utc, first - _ONE_US, last)
            total += 0 if found is None else counted_to_the_end(spec, found).count
        return total
    except (DurableError, ValueError, OverflowError):
        return 0


def _count_missed(cur, d: Definition, cause: str, count: int, now: datetime) -> None:
    cur.execute(query("lifecycle_queries.sql", "count_missed"), {
        "scope_id": d.scope_id, "schedule_id": d.schedule_id, "cause": cause, "count": count,
        "now": now})


def _stored_target(d: Definition) -> dict[str, Any]:
    """The active generation's target, re-checked against this process's Work registry."""
    try:
        target = WorkTarget.from_json(d.target_json)
    except PayloadNotEncodable as exc:
        # The payload itself is refused (over the Work cap, DS250, or one the codec refuses,
        # DS209): the pass quarantined the schedule for it. Its own code and repair, not
        # DS105's "register the Work", which is registered.
        raise type(exc)(
            f"the schedule's stored target cannot be re-issued ({exc.message}): pass "
            "target= with a payload that fits (docs/operations.md \"Faults\")",
            **{**exc.context, "schedule_id": d.schedule_id, "refused": "stored_target"},
        ) from exc
    except (DurableError, TypeError, ValueError, KeyError) as exc:  # a tampered snapshot
        raise UnknownWorkTarget("the stored target cannot be read back; pass target=",
                                schedule_id=d.schedule_id) from exc
    return check.target(target)


def _retired(row) -> dict[str, Any]:
    return {"occurrence": row[0], "generation": row[1], "kind": row[2],
            "first": records.iso(row[3]), "last": records.iso(row[4])}


@scope_optional
def delete(scope: str, schedule_id: str, expected_revision: int | None = None,
           actor: str = "") -> ScheduleInfo:
    """Delete the schedule: terminal for this identity (DS107 for every later command).

    Pending occurrences are canceled; accepted Work is not touched (the Work runtime owns it).
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    expected_revision = check.revision(expected_revision, optional=True)
    actor = check.actor(actor)
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        fences = records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, expected_revision)
        canceled = run(cur, "retire_pending", {
            "scope_id": scope, "schedule_id": schedule_id, "state": "canceled",
            "below_generation": d.generation + 1, "now": now}).fetchall()
        revision = _guarded(run(cur, "finish_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "revision": d.revision,
            "state": "deleted", "from_states": builtins.list(STATES), "now": now,
        }).fetchone(), "delete", schedule_id)
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=None)
        _history(cur, scope, schedule_id, d.generation, "deleted", actor, now,
                 revision=revision, previous_state=d.state,
                 canceled=[_retired(r) for r in canceled])
        return _reread(cur, scope, schedule_id)


@scope_optional
def release_after_recovery(scope: str, schedule_id: str, actor: str = "", *,
                           expected_revision: int | None = None) -> ScheduleInfo:
    """Resume a schedule suspended for ``runtime_epoch_mismatch``, never moving its cursor.

    Rebinds the current store runtime epoch and scope generation (docs/protocol/schedules.md). Any
    other suspension (``scope_generation_mismatch``, ``clock_jump``, ``unevaluable``, ``operator``)
    is refused with ``ReleaseRefused`` (DS110): repair those with ``update()`` (a new
    generation). Raises ``ScheduleNotSuspended`` (DS116) for a schedule that is not suspended.
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    expected_revision = check.revision(expected_revision, optional=True)
    actor = check.actor(actor)
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        fences = records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, expected_revision)
        if d.state != "suspended":
            raise ScheduleNotSuspended("the schedule is not suspended", schedule_id=schedule_id,
                                       state=d.state)
        if d.suspension_reason != RELEASABLE_REASON:
            raise ReleaseRefused("only a runtime-epoch suspension can be released",
                                 schedule_id=schedule_id, reason=d.suspension_reason)
        revision = _guarded(run(cur, "release_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "revision": d.revision,
            "runtime_epoch": fences.runtime_epoch, "scope_generation": fences.scope_generation,
            "now": now,
        }).fetchone(), "release", schedule_id)
        # Due at once: the next pass evaluates (cursor, cutoff] under the usual rules (a long
        # suspension may then suspend again for clock_jump) and runs a pending coalesced
        # occurrence whose slot is free.
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=now)
        _history(cur, scope, schedule_id, d.generation, "released", actor, now,
                 revision=revision, released_reason=d.suspension_reason,
                 evidence=d.suspension_evidence,
                 runtime_epoch={"from": d.runtime_epoch, "to": fences.runtime_epoch},
                 scope_generation={"from": d.scope_generation, "to": fences.scope_generation},
                 cursor_utc=records.iso(d.cursor_utc))
        return _reread(cur, scope, schedule_id)


@scope_optional
def suspend(scope: str, schedule_id: str, reason: str, actor: str = "", *,
            expected_revision: int | None = None) -> ScheduleInfo:
    """Operator action: stop an active schedule (reason ``operator``, the note as evidence).

    A schedule that is already suspended or completed is returned unchanged. Resume it with
    ``update()`` (a new generation; nothing missed meanwhile is back-filled). A paused one is
    refused with ``ScheduleNotSuspendable`` (DS175): returning it unchanged would drop the
    note unseen, and suspending it would turn a ``resume()`` into a new generation.
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    reason = check.reason(reason)
    actor = check.actor(actor)
    expected_revision = check.revision(expected_revision, optional=True)
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        fences = records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, expected_revision)
        if d.state == "paused":
            raise ScheduleNotSuspendable("a paused schedule cannot be suspended",
                                         schedule_id=schedule_id, state=d.state)
        if d.state != "active":
            return from_definition(scope, d)
        evidence = {"note": reason, "actor": actor, "cursor_utc": records.iso(d.cursor_utc)}
        revision = _guarded(run(cur, "suspend_definition", {
            "scope_id": scope, "schedule_id": schedule_id, "revision": d.revision,
            "reason": OPERATOR_REASON, "evidence": records.to_json(evidence), "now": now,
        }).fetchone(), "suspend", schedule_id)
        records.upsert_dispatch(cur, routing_id=fences.routing_id, schedule_id=schedule_id,
                                due_at=None)
        _history(cur, scope, schedule_id, d.generation, "suspended", actor, now,
                 revision=revision, reason=OPERATOR_REASON, evidence=evidence)
        return _reread(cur, scope, schedule_id)


# ---------------------------------------------------------------- reads
@scope_optional
def get(scope: str, schedule_id: str) -> ScheduleInfo:
    """One schedule of ``scope`` (deleted ones too); ``ScheduleNotFound`` (DS108) otherwise."""
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    with scoped(scope, create=False) as cur:
        d = records.read_definition(cur, scope, schedule_id)
        if d is None:
            raise ScheduleNotFound("no such schedule in this scope", schedule_id=schedule_id)
        return from_definition(scope, d)


@scope_optional
def list_schedules(scope: str, *, states: Iterable[str] | None = None, after: str = "",
                   limit: int = 1000) -> builtins.list[ScheduleInfo]:
    """The schedules of ``scope`` in ``schedule_id`` order (exported as ``schedules.list``).

    ``states`` filters on lifecycle states; page with ``after=<last schedule_id>``.
    """
    validate_scope_id(scope)
    if not isinstance(after, str) or "\x00" in after or not check.encodable(after):
        # A NUL or a lone surrogate is no schedule id, and PostgreSQL text cannot hold it.
        raise InvalidArgument("after must be a string PostgreSQL text can hold (a schedule id)",
                              field="after")
    if type(limit) is not int or not 1 <= limit <= 10_000:
        raise InvalidArgument("limit must be an integer between 1 and 10000", field="limit")
    wanted = None
    if states is not None:
        try:
            wanted = builtins.list(states) if not isinstance(states, str) else [states]
        except TypeError:  # not iterable (states=5): a DS error, not a bare TypeError
            raise InvalidArgument("states must be a list of states", field="states",
                                  got=type(states).__name__) from None
        unknown = [s for s in wanted if s not in STATES]
        if unknown:
            raise InvalidArgument(f"unknown states {unknown!r}", field="states")
    with scoped(scope, create=False) as cur:
        rows = records.list_definitions(cur, scope, after=after, limit=limit, states=wanted)
        return [from_definition(scope, d) for d in rows]
