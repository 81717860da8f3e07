"""The one place where the processor evaluates a schedule generation.

Both ways of running a pass call :func:`generation_fence` and then :func:`evaluate_generation`:
the single-schedule step (``step.py``, one transaction per schedule) and the batched pass
(``batch.py``, the claimed schedules of one scope in one transaction). Whatever is added to
evaluation (a fence on the evaluator's inputs, a metric per decision) is added here once, so the
two can never decide differently for the same persisted state, cutoff and slot.

:func:`evaluate_pass` is what both call: the plain ``Every`` path (``evaluation/every_fast.py``)
when the definition's generation has nothing it does not handle, else the lifecycle inputs read
and :func:`evaluate_generation`.

Pure with respect to the database: it reads the definition row and slot state the caller
locked, and raises the evaluation errors (``UnevaluableGeneration``, an invalid stored policy)
that make the caller quarantine the row.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from durable_schedule.evaluation.cron import fence as tz_rules
from durable_schedule.evaluation.decision import Decision, SlotState, decide
from durable_schedule.evaluation.every_fast import decide_every
from durable_schedule.evaluation.timeline import ScheduleSpec
from durable_schedule.schedules.records import Definition


def generation_fence(spec: ScheduleSpec, cursor_utc: datetime) -> tuple[str, dict] | None:
    """The fences on the evaluator's own inputs, checked before a generation is evaluated:
    ``(reason, evidence)`` when the schedule must be suspended instead, else None. Today the
    time-zone rules of a cron generation (docs/schedules.md "Time-zone rules fingerprint")."""
    return tz_rules.check(spec, cursor_utc)


def evaluate_generation(d: Definition, cutoff: datetime, occupant: Any,
                        pending_last: datetime | None, *,
                        spec: ScheduleSpec | None = None,
                        lifecycle: dict[str, Any] | None = None,
                        buffered: int = 0) -> Decision:
    """Decide what the pass does with ``d`` at ``cutoff``: the stored spec strictly
    re-validated, then ``decide()`` with the slot as locked (``occupant``: the Work id holding
    the slot, or None; ``pending_last``: the last instant of the pending coalesced occurrence).
    ``spec``: ``d.spec()`` when the caller already validated it. ``lifecycle``: the bounds,
    run count and resume instant from ``processor.lifecycle.decide_inputs`` (required: both
    paths read the run count under the definition lock). ``buffered``: the buffered
    occurrences waiting (``buffer_all``; the batched pass leaves those schedules to the single
    step, which counts them)."""
    spec = d.spec() if spec is None else spec
    if lifecycle is None:
        raise TypeError("evaluate_generation needs lifecycle=processor.lifecycle.decide_inputs()")
    return decide(spec, d.accepted_at_utc, d.cursor_utc, cutoff,
                  safety_window=d.safety_window, misfire=d.misfire, overlap=d.overlap,
                  slot=SlotState(occupant is not None, pending_last), **lifecycle,
                  buffered=buffered, buffer_limit=d.buffer_limit)


def evaluate_pass(d: Definition, cutoff: datetime, occupant: Any,
                  pending_last: datetime | None, *, spec: ScheduleSpec,
                  lifecycle: Callable[[], dict[str, Any]], buffered: int = 0) -> Decision:
    """:func:`evaluate_generation` with ``lifecycle=lifecycle()`` (the caller's
    ``processor.lifecycle.decide_inputs`` for ``d``, read only when needed), the answer
    of ``evaluation.every_fast.decide_every`` instead when it has one: a generation without
    bounds (no ``end_at``, no ``max_runs``: ``decide()`` would get ``Bounds`` that clip
    nothing and no run count; ``start_at`` only moved the cursor when the generation was
    accepted), without a buffer (``buffer_limit``, ``buffered``) and the other preconditions
    that function checks itself. Equal decisions for every input the fast path accepts:
    tests/evaluation/test_every_fast.py."""
    if (d.end_at is None and d.max_runs is None and d.buffer_limit is None and buffered == 0
            and type(buffered) is int and _plain_start(d.start_at)):
        decision = decide_every(spec, d.accepted_at_utc, d.cursor_utc, cutoff,
                                safety_window=d.safety_window, misfire=d.misfire,
                                overlap=d.overlap, occupied=occupant is not None,
                                pending_last=pending_last, late_from=d.resumed_at)
        if decision is not None:
            return decision
    return evaluate_generation(d, cutoff, occupant, pending_last, spec=spec,
                               lifecycle=lifecycle(), buffered=buffered)


def _plain_start(start_at: Any) -> bool:
    """``Bounds(start_at=start_at)`` accepts it and ``decide()`` never reads it: None or a
    UTC datetime (any other value goes to the general path, which validates it)."""
    return start_at is None or (type(start_at) is datetime and start_at.tzinfo is UTC)
