"""Backfill: run the instants of a past range now (docs/schedules.md "Backfill").

``backfill(scope, id, start, end, request_id, actor)`` evaluates the active generation's spec
over ``[start, end]`` (``end`` at or before the schedule's cursor: later instants are the
schedule's own to run under its misfire policy) and materializes each
instant as its own ``recovery`` occurrence, ``first = last = the instant``. The identity of an
occurrence is ``(scope, schedule, generation, kind, first)``, so a repeated backfill of an
overlapping range finds the instants it already materialized and creates nothing for them: no
duplicate Work, whatever the request ids. An instant an occurrence of any generation already
ran (or will run) is reported as existing too: an update that kept the grid (a new payload, say)
does not make the instants its predecessor ran runnable again, unless the caller passes
``rerun_earlier_generations=True`` (an instant still runs at most once per generation). The
cursor does not move (a backfill is beside the schedule's own progress, not part of it), and
``max_runs`` counts what it runs like any other recovery run: one that would run more than the
runs left is refused (DS153). Instants before ``start_at`` or after ``end_at`` do not exist for
the generation, so a backfill never runs them.

Overlap (evaluation/overlap.py): ``allow_all`` runs every new instant at once; ``skip`` runs the
first new instant when the slot is free and records the others skipped (counted under
``missed["overlap"]``; such an instant never ran, so a later backfill runs it: its skipped
occurrence becomes pending and is linked, and one skipped again is counted once);
``queue_one`` and ``buffer_all`` run one new instant per backfill and refuse a range of several
(DS153) rather than running them side by side (a backfill does not fill the buffer). A held
slot refuses ``queue_one``, ``skip`` and ``buffer_all`` backfills (DS150), and so do buffered
instants (``buffer_all``) or a pending coalesced occurrence (``queue_one``) still waiting,
writing nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from durable_schedule.barriers import (
    SCHEDULE_BRIDGE_BEFORE_COMMIT,
    SCHEDULE_LINK_AFTER_COMMIT,
    barrier,
)
from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import BackfillRefused, InvalidArgument, TriggerSlotBusy
from durable_schedule.evaluation import bounds as bounding
from durable_schedule.evaluation.timeline import as_utc, instants_in, next_instant_after
from durable_schedule.processor import lifecycle as hooks
from durable_schedule.processor.bridge import OccurrenceIdentity, bridge
from durable_schedule.schedules import records
from durable_schedule.schedules import validation as check
from durable_schedule.schedules.api import _history, _locked
from durable_schedule.schedules.lifecycle import _article, _request_id
from durable_schedule.schedules.records import TERMINAL_WORK_STATES, run
from durable_schedule.store.transactions import scoped, validate_scope_id

#: The most instants one backfill materializes (ask again for the rest).
MAX_INSTANTS = 1000
_ONE_US = timedelta(microseconds=1)
_EARLIEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Backfilled:
    """What one backfill did, per instant (UTC): run now, recorded skipped, or already there."""

    request_id: str
    ran: list[tuple[datetime, Any]]
    skipped: list[datetime]
    existing: list[datetime]


@scope_optional
def backfill(scope: str, schedule_id: str, start: datetime, end: datetime, request_id: str,
             actor: str = "", *, rerun_earlier_generations: bool = False) -> Backfilled:
    """Materialize the instants of ``[start, end]`` as recovery occurrences (module docstring).

    Raises ``NaiveDatetime`` (DS103) for a naive ``start`` or ``end``, ``InvalidArgument``
    (DS406) for one that is not a datetime, a reversed range or one in the future,
    ``BackfillRefused`` (DS153) for too many instants, a queue_one range of several new
    instants, more runs than ``max_runs`` leaves, or a schedule that is not active or paused,
    and ``TriggerSlotBusy`` (DS150). ``rerun_earlier_generations`` (True or False, DS406
    otherwise): run instants that only earlier generations ran, on purpose.
    """
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    start = as_utc(start, "start", wrong_type=InvalidArgument)
    end = as_utc(end, "end", wrong_type=InvalidArgument)
    if end < start:
        raise InvalidArgument("end must not be before start", field="end")
    if start == _EARLIEST:
        # The range is searched from one microsecond before start, which datetime cannot hold.
        raise InvalidArgument("start must be later than datetime.min", field="start")
    request_id = _request_id(request_id)
    actor = check.actor(actor)
    if type(rerun_earlier_generations) is not bool:
        # Read as its truthiness, "no" would re-run every instant an earlier generation ran.
        raise InvalidArgument("rerun_earlier_generations must be True or False",
                              field="rerun_earlier_generations",
                              got=f"{type(rerun_earlier_generations).__name__} "
                                  f"{rerun_earlier_generations!r}"[:80])
    with scoped(scope) as cur:
        now = records.transaction_clock(cur)
        if end > now:
            raise InvalidArgument("a backfill covers past instants only: end is in the future",
                                  field="end", now=records.iso(now))
        records.lock_fences(cur, scope)
        d = _locked(cur, scope, schedule_id, None)
        if d.state not in ("active", "paused"):
            raise BackfillRefused(f"{_article(d.state)} {d.state} schedule cannot be backfilled",
                                  schedule_id=schedule_id, state=d.state)
        if end > d.cursor_utc:
            # Instants after the cursor are the schedule's own to run (or to skip) under its
            # misfire policy; a backfill beside them would run them twice.
            raise BackfillRefused("end is after the schedule's cursor: those instants are not "
                                  "past for the schedule yet", schedule_id=schedule_id,
                                  cursor_utc=records.iso(d.cursor_utc))
        spec = d.spec()
        bounds = hooks.bounds_of(d)
        # start_at / end_at: an instant outside them does not exist for the generation.
        instants = [t for t in _instants(spec, d.accepted_at_utc, start, end)
                    if bounding.exists(t, bounds)]
        key = {"scope_id": scope, "schedule_id": schedule_id, "generation": d.generation}
        backfilled = hooks.run_lifecycle(cur, "backfilled", {
            **key, "start": start, "end": end}).fetchall()
        # An instant whose recovery identity a skipped occurrence holds (an earlier backfill's
        # overlap skip, or the first of a skipped range) never ran: it is not existing, this
        # backfill may run it (that occurrence becomes its own, pending).
        dropped = {t for t, state in backfilled if state == "skipped"}
        # Every instant a skip dropped (not only a range's first), read before a revive below
        # shrinks its range: skipped again by this backfill, it is still counted once.
        skipped_before = hooks.run_lifecycle(cur, "skipped_ranges", {
            **key, "start": start, "end": end}).fetchall()
        existing = {t for t, _state in backfilled} - dropped
        # An instant the schedule itself ran (or will run: a pending coalesced or buffered
        # occurrence) is covered by that occurrence; running it again would be a second Work.
        # An earlier generation's run covers it too: an update that kept the grid (a new
        # payload) must not turn the instants its predecessor ran into runnable ones.
        ranges = hooks.run_lifecycle(cur, "covered", {
            **key, "start": start, "end": end,
            "this_generation_only": rerun_earlier_generations}).fetchall()
        existing |= {t for t in instants if any(lo <= t <= hi for lo, hi in ranges)}
        new = [t for t in instants if t not in existing]
        busy = [r[0] for r in run(cur, "lock_slot", {"scope_id": scope,
                                                     "schedule_id": schedule_id}).fetchall()
                if r[1] not in TERMINAL_WORK_STATES]
        if not busy:  # a backfilled run behind the latest linked occurrence holds it too
            busy = [w for w in (hooks.revived_occupant(cur, d),) if w is not None]
        if new and busy and d.overlap != "allow_all":
            raise TriggerSlotBusy("the schedule's previous Work still runs",
                                  schedule_id=schedule_id, overlap=d.overlap,
                                  slot_work_id=str(busy[0]))
        waiting = hooks.buffered_count(cur, d)
        if new and waiting:
            # buffer_all: the buffered instants run first, in order (see trigger()).
            raise TriggerSlotBusy("buffered instants wait to run first",
                                  schedule_id=schedule_id, overlap=d.overlap, buffered=waiting)
        coalesced = hooks.coalesced_count(cur, d)
        if new and coalesced:
            # queue_one: the pending coalesced occurrence runs first (see trigger()).
            raise TriggerSlotBusy("a coalesced occurrence waits to run first",
                                  schedule_id=schedule_id, overlap=d.overlap,
                                  coalesced=coalesced)
        if len(new) > 1 and d.overlap in ("queue_one", "buffer_all"):
            raise BackfillRefused(
                f"{d.overlap} runs one instant at a time: backfill one instant per request, or "
                "use overlap skip or allow_all", schedule_id=schedule_id, new=len(new))
        run_now = new if d.overlap == "allow_all" else new[:1]
        left = bounding.runs_left(bounds, hooks.decide_inputs(cur, d)["runs"])
        if left is not None and len(run_now) > left:
            # max_runs counts a backfill's runs like any recovery run: never past the bound.
            raise BackfillRefused(
                f"the backfill would run {len(run_now)} instants, max_runs leaves {left}",
                schedule_id=schedule_id, max_runs=d.max_runs, runs_left=left)
        skipped = [t for t in new if t not in run_now]
        ran = []
        for instant in run_now:
            if instant in dropped:
                row = _revive(cur, key, spec, d.accepted_at_utc, instant, now, set(instants))
            else:
                row = run(cur, "insert_occurrence", {
                    **key, "kind": "recovery", "first": instant, "last": instant,
                    "state": "pending", "now": now, "jitter_us": None}).fetchone()
            identity = OccurrenceIdentity(scope, schedule_id, d.generation, "recovery", instant,
                                          fresh_id=row[0], fresh_proof=row[1:])
            ran.append((instant, bridge(cur, identity, d.target_json, now).link.work_id))
        for instant in skipped:
            run(cur, "insert_occurrence", {
                **key, "kind": "recovery", "first": instant, "last": instant,
                "state": "skipped", "now": now, "jitter_us": None})
        # An instant skipped again is still one skipped occurrence: counted once.
        hooks.count_missed(cur, d, "overlap", len([
            t for t in skipped if not any(lo <= t <= hi for lo, hi in skipped_before)]), now)
        _history(cur, scope, schedule_id, d.generation, "backfilled", actor, now,
                 request_id=request_id, start=records.iso(start), end=records.iso(end),
                 ran=[records.iso(t) for t, _ in ran], skipped=[records.iso(t) for t in skipped],
                 existing=len(instants) - len(new), cursor_utc=records.iso(d.cursor_utc),
                 rerun_earlier_generations=rerun_earlier_generations,
                 # runs whose recovery occurrence was a skipped one (its range split, if any)
                 revived=[records.iso(t) for t, _ in ran if t in dropped])
        result = Backfilled(request_id, ran, skipped, sorted(existing))
        if ran:
            barrier(SCHEDULE_BRIDGE_BEFORE_COMMIT)
    if ran:
        barrier(SCHEDULE_LINK_AFTER_COMMIT)
    return result


def _revive(cur, key: dict[str, Any], spec, accepted_at: datetime, instant: datetime,
            now: datetime, backfilled: set[datetime]) -> tuple:
    """Make the skipped recovery occurrence that holds ``instant``'s identity the instant's
    own pending one; returns the row the bridge needs (id and proof). A skipped range keeps
    its other instants recorded as skipped: the rest of it is written again, from its first
    instant that is no recovery occurrence's identity yet (an earlier backfill of one of its
    instants has its own) and not one of ``backfilled`` (this backfill's instants: it runs,
    skips or finds each itself, under its own identity) -- the skip happened, and ``missed``
    already counted it."""
    row = hooks.run_lifecycle(cur, "revive_skipped", {**key, "first": instant,
                                                      "now": now}).fetchone()
    if row is None:  # read under the same definition lock a moment ago: a defect, not a race
        raise RuntimeError("the skipped occurrence to run matched no row under the lock")
    last = row[3]
    if last > instant:
        taken = {r[0] for r in hooks.run_lifecycle(cur, "recovery_firsts", {
            **key, "after": instant, "upto": last}).fetchall()}
        rest = next_instant_after(spec, accepted_at, instant)
        while rest is not None and rest <= last and (rest in taken or rest in backfilled):
            rest = next_instant_after(spec, accepted_at, rest)
        if rest is not None and rest <= last:
            run(cur, "insert_occurrence", {
                **key, "kind": "recovery", "first": rest, "last": last, "state": "skipped",
                "now": now, "jitter_us": None})
    return row[:3]


def _instants(spec, accepted_at: datetime, start: datetime, end: datetime) -> list[datetime]:
    """The nominal instants in ``[start, end]``, at most MAX_INSTANTS (DS153 beyond)."""
    found = instants_in(spec, accepted_at, start - _ONE_US, end)
    if found is None:
        return []
    if found.count > MAX_INSTANTS:
        # A cron window's count stops at the evaluator's limit: then it is a lower bound.
        holds = f"{found.count}" if found.count_exact else f"at least {found.count}"
        raise BackfillRefused(f"the range holds {holds} instants; at most "
                              f"{MAX_INSTANTS} per backfill", count=found.count,
                              count_exact=found.count_exact)
    out, t = [found.first], found.first
    while len(out) < found.count:
        t = next_instant_after(spec, accepted_at, t)
        out.append(t)
    return out
