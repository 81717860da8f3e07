"""The one place where the processor evaluates a schedule generation.

Both ways of running a pass call :func:`generation_fence` and then :func:`evaluate_generation`:
the single-schedule step (``step.py``, one transaction per schedule) and the batched pass
(``batch.py``, the claimed schedules of one scope in one transaction). Whatever is added to
evaluation (a fence on the evaluator's inputs, a metric per decision) is added here once, so the
two can never decide differently for the same persisted state, cutoff and slot.

Pure with respect to the database: it reads the definition row and slot state the caller
locked, and raises the evaluation errors (``UnevaluableGeneration``, an invalid stored policy)
that make the caller quarantine the row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from durable_schedule.evaluation.cron import fence as tz_rules
from durable_schedule.evaluation.decision import Decision, SlotState, decide
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
