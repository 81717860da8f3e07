"""The decision of a plain ``Every`` schedule, without ``decide()``'s general machinery.

Nearly every schedule a pass evaluates is an ``Every`` grid with no bounds, no pause behind it,
no pending coalesced occurrence and the slot policies ``queue_one``, ``skip`` or ``allow_all``:
for those ``decide()`` (evaluation/decision.py) spends most of its time on what cannot change
the answer -- re-validating arguments the stored row already guarantees, building a
``SlotState``, a ``Bounds`` and an ``InstantRange``, converting every instant to UTC again
(about a fifth of a batched pass's client time; docs/benchmarks.md "Batched schedule passes,
third round"). :func:`decide_every` computes the same ``Decision`` from integer microseconds
directly, and only when every precondition below holds; otherwise it returns None and the
caller runs ``decide()`` itself. Its preconditions, each one a branch of ``decide()`` it does not
reproduce:

* ``spec`` is exactly an ``Every`` (not a subclass) with a positive ``timedelta`` interval and
  an anchor that is None or a UTC ``datetime`` -- no cron, no one-shot spec;
* ``accepted_at``, ``cursor`` and ``cutoff`` are ``datetime`` instances (exactly) in
  ``datetime.UTC`` and ``cursor >= accepted_at`` (else ``decide()`` raises: unevaluable);
* ``misfire`` is ``run_once`` or ``skip``; ``overlap`` is ``queue_one``, ``skip`` or
  ``allow_all`` (``buffer_all`` counts its buffer); an unknown name makes ``decide()`` raise;
* ``safety_window`` is a positive ``timedelta``;
* no pending coalesced occurrence, no resume instant (``late_from``), no bounds (``end_at``,
  ``max_runs``; the caller checks those, see ``processor/evaluate.py``).

Under those, ``decide()`` reduces to: the grid instants in ``(cursor, cutoff]``; none is a
``noop``; the earliest later than the safety window is a ``suspend``; else one instant is
``nominal``, several follow the misfire policy, and an occupied slot turns a run into a
``coalesce`` (``queue_one``) or an overlap skip (``skip``). The equality of every field, the
evidence's keys in their order included, is a property test (tests/evaluation/test_every_fast.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from durable_schedule.evaluation.decision import Decision
from durable_schedule.evaluation.isotext import iso_us
from durable_schedule.evaluation.timeline import EVALUATOR_VERSIONS, Every
from durable_schedule.frozen import maker

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_VERSION = EVALUATOR_VERSIONS["every"]
_MISFIRE = ("run_once", "skip")
_OVERLAP = ("queue_one", "skip", "allow_all")
#: ``Decision(action, first, last, count, new_cursor, next_due, suspend_reason, evidence,
#: skip_cause, buffer_kind)``, every field given (durable_schedule/frozen.py); never
#: ``buffer`` here (``buffer_all`` is not a fast-path policy), so ``buffer_kind`` is None.
_decision = maker(Decision)


def _us(delta: timedelta) -> int:
    """``delta // timedelta(microseconds=1)``, without the division."""
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _from_us(micros: int) -> datetime | None:
    """``timeline.from_us``: the UTC datetime, None beyond Python's range."""
    try:
        return _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        return None


def _utc(value: object) -> bool:
    return type(value) is datetime and value.tzinfo is UTC


def decide_every(spec: object, accepted_at: datetime, cursor: datetime, cutoff: datetime, *,
                 safety_window: timedelta, misfire: str, overlap: str, occupied: bool,
                 pending_last: datetime | None = None,
                 late_from: datetime | None = None) -> Decision | None:
    """``decide(spec, accepted_at, cursor, cutoff, safety_window=..., misfire=...,
    overlap=..., slot=SlotState(occupied, pending_last), late_from=late_from)`` with no bounds,
    or None when an input is outside this path's preconditions (module docstring)."""
    if (type(spec) is not Every or pending_last is not None or late_from is not None
            or misfire not in _MISFIRE or overlap not in _OVERLAP
            or type(occupied) is not bool or type(safety_window) is not timedelta
            or not (_utc(accepted_at) and _utc(cursor) and _utc(cutoff))):
        return None
    interval, anchor = spec.interval, spec.anchor
    if type(interval) is not timedelta or not (anchor is None or _utc(anchor)):
        return None
    step = _us(interval)
    window_us = _us(safety_window)
    if step <= 0 or window_us <= 0 or cursor < accepted_at:
        return None
    accepted_us = _us(accepted_at - _EPOCH)
    base = accepted_us if anchor is None else _us(anchor - _EPOCH)
    lo, hi = _us(cursor - _EPOCH), _us(cutoff - _EPOCH)
    # timeline._first_k_after(base, step, lo): the first grid index after the cursor.
    k0 = 0 if lo < base else (lo - base) // step + 1
    if hi <= lo or hi < base or (hi - base) // step < k0:
        # Rule 1: nothing in (cursor, cutoff]; next_due is the first instant after the cursor.
        return _decision("noop", None, None, 0, cursor, _from_us(base + k0 * step), None, None,
                         None, None)
    k1 = (hi - base) // step
    first_us, last_us, count = base + k0 * step, base + k1 * step, k1 - k0 + 1
    first, last = _from_us(first_us), _from_us(last_us)
    lateness_us = hi - first_us
    evidence = {
        "evaluator_version": _VERSION,
        "kind": "every",
        "cursor": iso_us(cursor),
        "cutoff": iso_us(cutoff),
        "earliest": iso_us(first),
        "latest": iso_us(last),
        "count": count,
        "lateness_us": lateness_us,
        "window_us": window_us,
        "misfire": misfire,
        "overlap": overlap,
        "slot_occupied": occupied,
        "pending_coalesced_last": None,
    }
    if lateness_us > window_us:
        # Rule 2: a clock jump or a long outage.
        return _decision("suspend", first, last, count, cursor, first, "clock_jump", evidence,
                         None, None)
    # Rule 3, then rule 4 (overlap.apply with nothing pending and nothing buffered).
    cause = None
    if count == 1:
        action = "nominal"
    elif misfire == "run_once":
        action = "recovery"
    else:
        action, cause = "skipped", "misfire"
    if cause is None and occupied:
        if overlap == "queue_one":
            action = "coalesce"
        elif overlap == "skip":
            action, cause = "skipped", "overlap"
    # The first grid instant after ``last`` (timeline.next_instant_after) is the next one.
    return _decision(action, first, last, count, last, _from_us(last_us + step), None,
                     evidence, cause, None)
