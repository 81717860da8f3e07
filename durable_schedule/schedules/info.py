"""``ScheduleInfo``: what ``get`` / ``list`` and every schedule command return."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from durable_schedule.errors import DurableError
from durable_schedule.evaluation.timeline import ScheduleSpec, next_instant_after
from durable_schedule.schedules.records import Definition
from durable_schedule.work.target import WorkTarget


@dataclass(frozen=True)
class ScheduleInfo:
    """One schedule identity as stored, with its active generation.

    ``spec`` and ``target`` are rebuilt from the stored generation; they are ``None`` when the
    stored data cannot be read back (a tampered row: ``spec_json`` / ``target_json`` keep the
    raw values). ``next_nominal_utc`` is the first nominal instant after the cursor of an active
    schedule (``None`` otherwise); the processor may materialize it a little later, never
    earlier. ``revision`` changes with every lifecycle change (create, update, suspend, release,
    completion, delete), not with cursor moves: pass it as ``expected_revision``.
    """

    scope: str
    schedule_id: str
    state: str
    revision: int
    generation: int
    kind: str | None
    spec: ScheduleSpec | None
    spec_json: Any
    target: WorkTarget | None
    target_json: Any
    overlap: str | None
    misfire: str | None
    safety_window: timedelta | None
    accepted_at_utc: datetime | None
    evaluator_version: str | None
    created_by: str | None
    cursor_utc: datetime
    next_nominal_utc: datetime | None
    runtime_epoch: int
    scope_generation: int
    suspension_reason: str | None
    suspension_evidence: dict[str, Any] | None
    suspended_at: datetime | None
    created_at: datetime
    updated_at: datetime
    paused_at: datetime | None = None
    paused_by: str | None = None
    pause_note: str | None = None
    resumed_at: datetime | None = None
    #: Instants skipped per cause: ``misfire`` (misfire ``skip``), ``overlap`` (overlap
    #: ``skip``), ``buffer_overflow`` (``buffer_all`` with a full buffer), ``paused`` (resume
    #: with ``catch_up="skip"``), ``superseded`` (an update: instants no pass evaluated, and
    #: those of the pending occurrences it superseded).
    missed: dict[str, int] = field(default_factory=dict)
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_runs: int | None = None
    jitter: timedelta | None = None
    #: ``buffer_all``: how many instants may wait behind the held slot (None otherwise).
    buffer_limit: int | None = None


def _target(target_json: Any) -> WorkTarget | None:
    try:
        return WorkTarget.from_json(target_json)
    except (DurableError, TypeError, ValueError, KeyError):
        return None


def from_definition(scope: str, d: Definition) -> ScheduleInfo:
    try:
        spec = d.spec()
    except DurableError:
        spec = None
    next_nominal = None
    if spec is not None and d.state == "active" and d.accepted_at_utc is not None:
        next_nominal = next_instant_after(spec, d.accepted_at_utc, d.cursor_utc)
        if d.end_at is not None and next_nominal is not None and next_nominal > d.end_at:
            next_nominal = None
    return ScheduleInfo(
        scope=scope, schedule_id=d.schedule_id, state=d.state, revision=d.revision,
        generation=d.generation, kind=d.kind, spec=spec, spec_json=d.spec_json,
        target=_target(d.target_json), target_json=d.target_json, overlap=d.overlap,
        misfire=d.misfire, safety_window=d.safety_window, accepted_at_utc=d.accepted_at_utc,
        evaluator_version=d.evaluator_version, created_by=d.created_by, cursor_utc=d.cursor_utc,
        next_nominal_utc=next_nominal, runtime_epoch=d.runtime_epoch,
        scope_generation=d.scope_generation, suspension_reason=d.suspension_reason,
        suspension_evidence=d.suspension_evidence, suspended_at=d.suspended_at,
        created_at=d.created_at, updated_at=d.updated_at, paused_at=d.paused_at,
        paused_by=d.paused_by, pause_note=d.pause_note, resumed_at=d.resumed_at,
        missed=dict(d.missed or {}), start_at=d.start_at, end_at=d.end_at,
        max_runs=d.max_runs, jitter=d.jitter, buffer_limit=d.buffer_limit,
    )
