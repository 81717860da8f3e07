"""The per-pass schedule decision (docs/protocol/schedules.md "Occurrence materialization", "Clock
and evaluator fences"; docs/protocol/schedules.md rules S1, S3 and S4).

``decide()`` is what one scoped processor transaction does with a schedule after its fences
passed: given the persisted generation (spec, ``accepted_at_utc``, policies), the persisted
cursor, the database cutoff and the state of the schedule-wide slot, it returns exactly one
``Decision``. It reads no clock and touches no database; the caller writes the disposition and
``new_cursor`` in one transaction, so a rollback leaves neither (docs/protocol/schedules.md rule
S1).

Order of the rules, each pinned by a test in ``tests/evaluation/test_decision.py``:

1. ``cutoff <= cursor``, or no nominal instant in ``(cursor, cutoff]``: ``noop``.
2. The earliest unevaluated instant is late by more than the safety window
   (``cutoff - first > safety_window``; exactly the window is still in time): ``suspend`` with
   reason ``"clock_jump"`` and evidence, cursor unmoved, no Work.
3. One instant: ``nominal``. Several, or instants that fell while paused (before
   ``late_from``): the misfire policy — ``run_once`` gives one ``recovery`` occurrence for the
   inclusive range ``[first, last]``, ``skip`` one ``skipped`` range.
4. Overlap ``queue_one``: a ``nominal`` or ``recovery`` action becomes ``coalesce`` when the slot
   is occupied by a nonterminal Work of any generation, *or* when a pending coalesced
   occurrence already exists (``slot.pending_coalesced_last is not None``). The second case
   keeps order and "at most one queued": once the slot frees, the pending coalesced occurrence
   runs first and absorbs the instants that arrived meanwhile, instead of a newer nominal
   occurrence overtaking it or running beside it.

   Overlap ``buffer_all``: a ``nominal`` or ``recovery`` action becomes ``buffer`` when the slot
   is occupied *or* older buffered occurrences still wait (``buffered > 0``): the caller writes
   it as its own pending occurrence (kind ``nominal`` for one instant, ``recovery`` for a
   range), and runs the oldest buffered occurrence whenever the slot is free. With
   ``buffer_limit`` occurrences already waiting it becomes ``skipped`` with cause
   ``buffer_overflow`` instead (counted, like an overlap ``skip``).

   A missed range under ``skip`` (``skipped``) also becomes ``coalesce`` when a pending
   coalesced occurrence exists, and only then. That pending occurrence's last instant only moves
   forward, so a skipped range recorded behind it would end up *inside* its range once the next
   instant is absorbed, and those instants would be covered twice (skipped and run). Absorbing
   adds no run (one is already queued), so the skip policy's promise, no catch-up run for a
   missed range, still holds. With the slot occupied and nothing pending, ``skipped`` stays
   ``skipped``: nothing would run anyway and a later coalesced occurrence starts after it.

For ``coalesce`` the decision reports the NEW instants only; the caller merges them: if no
pending coalesced occurrence exists it creates one with identity ``first`` and range
``[first, last]``; otherwise it keeps the existing row's ``first_nominal_utc`` (its identity) and
sets ``last_nominal_utc = max(existing last, decision.last)`` — the last instant only moves
forward (docs/protocol/schedules.md). Materializing a pending coalesced occurrence once the slot is
free is the caller's job and needs no decision: it happens whatever ``decide()`` returns (even
``noop``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from durable_schedule.errors import (
    InvalidArgument,
    InvalidBufferLimit,
    InvalidSchedulePolicy,
    NonPositiveDuration,
    UnevaluableGeneration,
)
from durable_schedule.evaluation import bounds as bounding
from durable_schedule.evaluation import overlap as overlap_policy
from durable_schedule.evaluation.bounds import Bounds
from durable_schedule.evaluation.isotext import iso_us
from durable_schedule.evaluation.timeline import (
    EVALUATOR_VERSIONS,
    ScheduleSpec,
    as_utc,
    counted_to_the_end,
    instants_in,
    kind_of,
    next_instant_after,
    to_us,
)

MISFIRE_POLICIES = ("run_once", "skip")
"""Persisted misfire policies; ``run_once`` is the default (docs/protocol/schedules.md rule S3)."""

OVERLAP_POLICIES = overlap_policy.OVERLAP_POLICIES
"""Persisted overlap policies; ``queue_one`` is the default (evaluation/overlap.py)."""

ACTIONS = ("noop", "nominal", "recovery", "skipped", "coalesce", "buffer", "suspend")
WORK_ACTIONS = ("nominal", "recovery")
"""Actions whose occurrence is bridged to Work in the same transaction."""

_OCCURRENCE_KIND = {
    "nominal": "nominal",
    "recovery": "recovery",
    "skipped": "recovery",
    "coalesce": "coalesced",
}
_ONE_US = timedelta(microseconds=1)


@dataclass(frozen=True)
class SlotState:
    """The schedule-wide ``queue_one`` slot as the caller read it in its transaction.

    ``occupied``: a nonterminal Work target from any generation of this schedule exists
    (retrying and suspended Work still occupy it, docs/protocol/schedules.md rule S4).
    ``pending_coalesced_last``: ``last_nominal_utc`` of the pending coalesced occurrence of the
    active generation, or ``None`` when there is none.
    """

    occupied: bool
    pending_coalesced_last: datetime | None = None


@dataclass(frozen=True)
class Decision:
    """The outcome of one pass for one schedule.

    ``first``/``last``/``count`` describe the new nominal instants the action covers (``None``,
    ``None``, ``0`` for ``noop``; the would-be range for ``suspend``). ``new_cursor`` is ``last``
    for every action that records a disposition and the unchanged cursor for ``noop`` and
    ``suspend``. ``next_due`` is the first nominal instant after ``new_cursor`` (``None`` when
    the spec has no more: the generation is complete once nothing is pending).
    """

    action: str
    first: datetime | None
    last: datetime | None
    count: int
    new_cursor: datetime
    next_due: datetime | None
    suspend_reason: str | None = None
    evidence: dict[str, Any] | None = None
    #: For ``skipped``: ``"misfire"`` (the misfire policy ``skip``), ``"overlap"`` (the
    #: overlap policy ``skip`` while the slot is held) or ``"buffer_overflow"`` (``buffer_all``
    #: with a full buffer); what ``missed`` counts it under.
    skip_cause: str | None = None
    #: For ``buffer``: the kind the occurrence would have had running at once (``nominal``, or
    #: ``recovery`` for a missed range or an instant that fell while paused, under misfire
    #: ``run_once``), decided before the overlap policy turned the action into ``buffer``.
    buffer_kind: str | None = None

    @property
    def produces_work(self) -> bool:
        """True when the caller must bridge the occurrence to Work in this transaction."""
        return self.action in WORK_ACTIONS

    @property
    def occurrence_kind(self) -> str | None:
        """The persisted occurrence kind (``nominal``/``recovery``/``coalesced``), if any.

        A ``skipped`` range is a ``recovery`` occurrence written in state ``skipped``; a
        ``buffer`` occurrence has the kind it would have had running at once (``buffer_kind``:
        a single instant that fell while paused is ``recovery``, as it is unbuffered).
        """
        if self.action == "buffer":
            return self.buffer_kind
        return _OCCURRENCE_KIND.get(self.action)


def _iso(value: datetime | None) -> str | None:
    return iso_us(value)  # value.isoformat(timespec="microseconds"), formatted once


def _aware(value: Any, name: str, *, optional: bool = False) -> datetime | None:
    """A datetime argument in UTC (naive: ``NaiveDatetime``; other types: ``InvalidArgument``)."""
    if value is None and optional:
        return None
    return as_utc(value, name, wrong_type=InvalidArgument)


def check_buffer_limit(overlap: Any, buffer_limit: Any) -> None:
    """A ``buffer_all`` generation has a buffer limit (1 to MAX_BUFFER_LIMIT), any other none
    (InvalidBufferLimit, DS154)."""
    if overlap != "buffer_all":
        if buffer_limit is not None:
            raise InvalidBufferLimit("buffer_limit is given only with overlap 'buffer_all'",
                                     overlap=repr(overlap)[:80])
        return
    if type(buffer_limit) is not int or not 1 <= buffer_limit <= overlap_policy.MAX_BUFFER_LIMIT:
        raise InvalidBufferLimit(
            f"buffer_limit must be an integer from 1 to {overlap_policy.MAX_BUFFER_LIMIT}",
            buffer_limit=repr(buffer_limit)[:80])


def _check_policies(misfire: Any, overlap: Any, safety_window: Any) -> int:
    """Validate the persisted policies; return the safety window in microseconds."""
    if misfire not in MISFIRE_POLICIES:
        raise InvalidSchedulePolicy("unknown misfire policy", misfire=repr(misfire)[:80])
    if overlap not in OVERLAP_POLICIES:
        raise InvalidSchedulePolicy("unknown overlap policy", overlap=repr(overlap)[:80])
    if not isinstance(safety_window, timedelta):
        raise InvalidArgument("safety_window must be a timedelta", field="safety_window")
    window_us = safety_window // _ONE_US
    if window_us <= 0:
        raise NonPositiveDuration("safety_window must be greater than zero",
                                  value=str(safety_window))
    return window_us


def decide(
    spec: ScheduleSpec,
    accepted_at: datetime,
    cursor: datetime,
    cutoff: datetime,
    *,
    safety_window: timedelta,
    misfire: str,
    overlap: str,
    slot: SlotState,
    bounds: Bounds = bounding.NONE,
    runs: int = 0,
    late_from: datetime | None = None,
    buffered: int = 0,
    buffer_limit: int | None = None,
) -> Decision:
    """Decide what one pass does for one schedule (rules 1-4 of the module docstring).

    Raises ``InvalidSchedulePolicy`` (DS111) for unknown policy names, ``NonPositiveDuration``
    (DS102) for a non-positive safety window, ``NaiveDatetime`` (DS103) for naive inputs,
    ``InvalidScheduleSpec`` (DS101) for a non-spec, and ``UnevaluableGeneration`` (DS114) when
    the persisted cursor lies before ``accepted_at`` (the cursor starts there and only moves
    forward, so stored state was altered; evaluating would back-fill instants before
    acceptance).

    Lifecycle (docs/schedules.md): ``bounds`` clips the window at ``end_at`` and ends the
    generation when ``max_runs`` is used up (``runs``: the scheduled runs so far); instants
    before ``late_from`` (the resume instant after a pause) are late only from ``late_from`` on,
    so a long pause is not mistaken for a clock jump.

    ``buffered``: the buffered occurrences waiting (``buffer_all``); ``buffer_limit``: the
    generation's bound (required for ``buffer_all``, refused otherwise: DS154).
    """
    window_us = _check_policies(misfire, overlap, safety_window)
    check_buffer_limit(overlap, buffer_limit)
    if type(buffered) is not int or buffered < 0:
        raise InvalidArgument("buffered must be a count >= 0", field="buffered")
    kind = kind_of(spec)
    if not isinstance(slot, SlotState) or not isinstance(slot.occupied, bool):
        raise InvalidArgument("slot must be a SlotState with a bool 'occupied'", field="slot")
    pending_last = _aware(slot.pending_coalesced_last, "pending_coalesced_last", optional=True)
    accepted_at = _aware(accepted_at, "accepted_at")
    cursor = _aware(cursor, "cursor")
    cutoff = _aware(cutoff, "cutoff")
    if cursor < accepted_at:
        raise UnevaluableGeneration(
            "the cursor lies before the generation's acceptance instant",
            reason="cursor_before_acceptance", cursor=_iso(cursor), accepted_at=_iso(accepted_at),
        )

    late_from = _aware(late_from, "late_from", optional=True)
    left = bounding.runs_left(bounds, runs)

    def following(after: datetime, used: int = 0) -> datetime | None:
        if left is not None and left - used <= 0:
            return None  # max_runs used up: no further instant exists
        return bounding.within(next_instant_after(spec, accepted_at, after), bounds)

    found = None if left == 0 else instants_in(spec, accepted_at, cursor,
                                               bounding.clip(cutoff, bounds))
    if found is None:
        # Rule 1: nothing to evaluate (also covers a cutoff at or behind the cursor).
        return Decision("noop", None, None, 0, cursor, following(cursor))

    late_base = found.first if late_from is None else max(found.first, late_from)
    lateness_us = to_us(cutoff) - to_us(late_base)
    evidence: dict[str, Any] = {
        "evaluator_version": EVALUATOR_VERSIONS[kind],
        "kind": kind,
        "cursor": _iso(cursor),
        "cutoff": _iso(cutoff),
        "earliest": _iso(found.first),
        "latest": _iso(found.last),
        "count": found.count,
        "lateness_us": lateness_us,
        "window_us": window_us,
        "misfire": misfire,
        "overlap": overlap,
        "slot_occupied": slot.occupied,
        "pending_coalesced_last": _iso(pending_last),
    }
    if overlap == "buffer_all":
        evidence["buffered"] = buffered
    if late_from is not None:
        evidence["late_from"] = _iso(late_from)
    if found.local is not None:
        # Cron: the local wall time (and fold) beside the UTC identity, so an operator sees
        # why 02:30 ran at 03:00; the count is "at least" when it was not counted to the end.
        evidence["local"] = found.local
        evidence["count_exact"] = found.count_exact
    if lateness_us > window_us:
        # Rule 2: a clock jump or a long outage; suspend before moving the cursor or any Work.
        return Decision("suspend", found.first, found.last, found.count, cursor, found.first,
                        suspend_reason="clock_jump", evidence=evidence)

    # Rule 3: in time; one instant is nominal, a missed range follows the misfire policy. An
    # instant that fell while the schedule was paused (before ``late_from``) is missed however
    # many there are: in time only because its lateness counts from the resume.
    if found.count == 1 and (late_from is None or found.first >= late_from):
        action = "nominal"
    elif misfire == "run_once":
        action = "recovery"
    else:
        action = "skipped"
    # Rule 4: the overlap policy (queue_one keeps at most one queued occurrence behind the
    # occupied slot; skip skips; allow_all has no slot).
    unbuffered = action
    action, cause = overlap_policy.apply(action, overlap, occupied=slot.occupied,
                                         pending=pending_last is not None, buffered=buffered,
                                         buffer_limit=buffer_limit)
    # A run (or a new pending coalesced or buffered occurrence, which will run) uses one of
    # max_runs.
    used = 1 if action in WORK_ACTIONS or action == "buffer" or (
        action == "coalesce" and pending_last is None) else 0
    if action == "skipped" and not found.count_exact:
        # A skip records its count (missed, the history detail): counted to the end.
        found = counted_to_the_end(spec, found)
        evidence["count"], evidence["count_exact"] = found.count, True
    return Decision(action, found.first, found.last, found.count, found.last,
                    following(found.last, used), evidence=evidence, skip_cause=cause,
                    buffer_kind=unbuffered if action == "buffer" else None)
