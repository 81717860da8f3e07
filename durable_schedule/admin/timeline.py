"""What a schedule's and a Work's detail page shows: their timelines (issue 6, item 4).

Pure reads through the models, run inside the page's scoped read transaction
(:func:`durable_schedule.admin.scoping.read_scope`). The next due instant is computed by the
evaluator from the active generation and the cursor, exactly as the processor would
(docs/protocol/schedules.md rules S1-S2); "now" for lateness is the database clock seam, never
Python's clock (docs/protocol/conventions.md rule C3), so a test's controlled clock drives the page
too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import DateTimeField
from django.db.models.expressions import RawSQL

from durable_schedule.admin import scoping
from durable_schedule.admin.cron_upcoming import upcoming
from durable_schedule.errors import DurableError
from durable_schedule.evaluation import bounds as bounding
from durable_schedule.evaluation.timeline import next_instant_after, spec_from_json
from durable_schedule.store.models import (
    Occurrence,
    ScheduleDefinition,
    ScheduleDispatch,
    ScheduleGeneration,
    ScheduleHistory,
    Scope,
    Store,
    Work,
    WorkHistory,
    WorkPermit,
    WorkQuarantine,
)
from durable_schedule.store.transactions import connection

#: How many occurrences and history events a detail page shows (newest first).
RECENT = 25
#: Lifecycle states in which a schedule has no next instant to evaluate.
FINISHED = frozenset({"deleted", "completed"})
#: The clock seam as a queryset annotation: the statement's transaction timestamp in production.
DATABASE_NOW = RawSQL("durable_schedule_clock('transaction')", [], output_field=DateTimeField())


def database_now(request=None) -> datetime:
    """The database clock seam's "now", read once per request (display only)."""
    cached = getattr(request, "_durable_admin_now", None) if request is not None else None
    if cached is not None:
        return cached
    with connection().cursor() as cur:
        cur.execute("select durable_schedule_clock('clock')")
        now = cur.fetchone()[0]
    if request is not None:
        request._durable_admin_now = now
    return now


def next_due(state, kind, spec, evaluator_version, accepted_at, cursor) -> datetime | None:
    """The first nominal instant after the cursor; None when finished or unevaluable."""
    if state in FINISHED or kind is None or accepted_at is None:
        return None
    try:
        return next_instant_after(spec_from_json(kind, spec, evaluator_version), accepted_at,
                                  cursor)
    except DurableError:
        # A tampered or unknown spec: the runner quarantines it (docs/protocol/runner.md rules
        # R1-R3); the page shows the generation's raw spec instead of an instant.
        return None


def lateness(due: datetime | None, now: datetime) -> timedelta | None:
    """How far ``now`` is past ``due``; None when nothing is due yet."""
    if due is None or due > now:
        return None
    return now - due


def stamp(value: datetime | None) -> str:
    """The admin's one timestamp format: ``2030-01-01 12:00:00 UTC`` ("—" for none)."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def describe_spec(spec) -> str:
    """A spec as an operator reads it: ``every 10 min``, ``once at 2030-01-01 12:00:00 UTC``,
    ``once, 1 h after acceptance``, ``cron 30 2 * * * in Europe/Berlin``; other kinds by
    their own ``describe()`` or repr."""
    from durable_schedule.evaluation.timeline import After, At, Every

    if isinstance(spec, Every):
        text = f"every {format_duration(spec.interval)}"
        return text + (f" from {stamp(spec.anchor)}" if spec.anchor is not None else "")
    if isinstance(spec, At):
        return f"once at {stamp(spec.when)}"
    if isinstance(spec, After):
        return f"once, {format_duration(spec.delay)} after acceptance"
    if type(spec).__name__ == "Cron":
        return f"cron {spec.expression} in {spec.tz}"
    describe = getattr(spec, "describe", None)
    return describe() if callable(describe) else repr(spec)


def stored_spec_text(kind: str | None, spec_json, evaluator_version: str | None) -> str:
    """A stored spec as :func:`describe_spec` reads it; its raw JSON only when it cannot be read
    back (a tampered or unknown spec, which the runner quarantines)."""
    try:
        return describe_spec(spec_from_json(kind, spec_json, evaluator_version))
    except DurableError:
        return f"{kind}: {as_json(spec_json)}"


def describe_limits(generation: ScheduleGeneration) -> str:
    """A generation's bounds and jitter as an operator reads them: ``from 2030-01-01 12:00:00
    UTC, until 2030-02-01 00:00:00 UTC, at most 5 runs, jitter up to 30 s``; "—" for none."""
    parts = []
    if generation.start_at is not None:
        parts.append(f"from {stamp(generation.start_at)}")
    if generation.end_at is not None:
        parts.append(f"until {stamp(generation.end_at)}")
    if generation.max_runs is not None:
        parts.append(f"at most {generation.max_runs} run{'s' if generation.max_runs != 1 else ''}")
    if generation.jitter:
        parts.append(f"jitter up to {format_duration(generation.jitter)}")
    return ", ".join(parts) or "—"


def describe_overlap(generation: ScheduleGeneration) -> str:
    """The overlap and misfire policies: ``queue_one / run_once``; a ``buffer_all`` generation
    with its bound, ``buffer_all (up to 100 waiting) / run_once``."""
    overlap = generation.overlap_policy
    if overlap == "buffer_all" and generation.buffer_limit is not None:
        overlap += f" (up to {generation.buffer_limit} waiting)"
    return f"{overlap} / {generation.misfire_policy}"


def format_duration(delta: timedelta | None) -> str:
    """``1 d 3 h``, ``4 min 2 s``, ``350 ms``: two units at most, for a table cell."""
    if delta is None:
        return "—"
    micros = delta // timedelta(microseconds=1)
    if micros < 1_000_000:
        return f"{micros // 1000} ms"
    units = [("d", 86_400), ("h", 3600), ("min", 60), ("s", 1)]
    seconds, parts = micros // 1_000_000, []
    for name, size in units:
        if seconds >= size:
            parts.append(f"{seconds // size} {name}")
            seconds %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def as_json(value) -> str:
    """A stored JSON value as JSON text (templates would show Python's repr)."""
    return json.dumps(value, sort_keys=True, default=str)


#: The most characters of one stored JSON value a page shows: a Work payload (and the target
#: snapshot holding it, a result, a quarantined result) may be 32 MiB.
JSON_SHOWN = 10_000


def json_preview(value, *, ascii_only: bool = True) -> str:
    """:func:`as_json`, cut after :data:`JSON_SHOWN` characters with the whole size said.
    ``ascii_only=False``: non-ASCII text as it is (how Django's own JSON field display read)."""
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=ascii_only)
    if len(text) <= JSON_SHOWN:
        return text
    size = len(text.encode())
    return (f"{text[:JSON_SHOWN]} … (cut: {size} bytes of JSON in all; read the whole value "
            "with the API, e.g. work.get())")


def _with_json(rows, **fields):
    """Attach ``<name>`` = JSON text of ``row.<field>`` to each row, for the templates."""
    for row in rows:
        for name, field in fields.items():
            setattr(row, name, json_preview(getattr(row, field)))
    return rows


@dataclass(frozen=True)
class OccurrenceRow:
    occurrence: Occurrence
    work: Work | None


def schedule_timeline(schedule: ScheduleDefinition, request=None) -> dict:
    """Generations, recent occurrences with their Work, history, cursor, next due, fences."""
    scope_id, schedule_id = schedule.scope_id, schedule.schedule_id
    generations = _with_json(
        scoping.store_rows(ScheduleGeneration).filter(scope_id=scope_id, schedule_id=schedule_id)
        .order_by("-generation"), target_text="target")
    for g in generations:
        g.spec_text = stored_spec_text(g.kind, g.spec, g.evaluator_version)
        g.limits_text = describe_limits(g)
        g.overlap_text = describe_overlap(g)
        g.safety_window_text = format_duration(g.safety_window)
    active = next((g for g in generations if g.generation == schedule.active_generation), None)
    occurrences = list(
        scoping.store_rows(Occurrence).filter(scope_id=scope_id, schedule_id=schedule_id)
        .order_by("-first_nominal_utc", "-id")[:RECENT]
    )
    work_ids = [o.work_id for o in occurrences if o.work_id is not None]
    works = {w.work_id: w for w in scoping.store_rows(Work)
             .filter(scope_id=scope_id, work_id__in=work_ids)
             .only("id", "scope_id", "work_id", "state", "attempt")}
    scope = scoping.store_rows(Scope).filter(scope_id=scope_id).first()
    dispatch = None
    if scope is not None:
        dispatch = scoping.store_rows(ScheduleDispatch).filter(
            scope_routing_id=scope.routing_id, schedule_id=schedule_id
        ).first()
    store = scoping.store_rows(Store).filter(id=1).first()
    now = database_now(request)
    runs_left = None
    if active is not None and active.max_runs is not None:
        runs_left = bounding.runs_left(bounding.Bounds(max_runs=active.max_runs),
                                       scheduled_runs(scope_id, schedule_id))
    due = next_due(
        schedule.state,
        active.kind if active else None,
        active.spec if active else None,
        active.evaluator_version if active else None,
        active.accepted_at_utc if active else None,
        schedule.cursor_utc,
    )
    return {
        "now": now,
        "cursor": schedule.cursor_utc,
        "next_due": due,
        "cron": upcoming(active.kind, active.spec, active.evaluator_version,
                         schedule.cursor_utc, end_at=active.end_at, runs_left=runs_left)
        if active and schedule.state not in FINISHED else None,
        "runs_left": runs_left,
        # Only an active schedule can be late: a paused or suspended one waits for an
        # operator, which its state says (docs/admin.md; the list column reads the same).
        "lateness": format_duration(lateness(due, now) if schedule.state == "active" else None),
        "unevaluable": active is not None and due is None and schedule.state not in FINISHED
        and _unevaluable(active),
        "active": active,
        "generations": generations,
        "occurrences": [OccurrenceRow(o, works.get(o.work_id)) for o in occurrences],
        "history": _with_json(
            scoping.store_rows(ScheduleHistory).filter(scope_id=scope_id, schedule_id=schedule_id)
            .order_by("-recorded_at", "-id")[:RECENT], detail_text="detail"),
        "buffered": _buffered(active),
        "evidence": as_json(schedule.suspension_evidence)
        if schedule.suspension_evidence is not None else None,
        "dispatch": dispatch,
        "store_epoch": store.runtime_epoch if store else None,
        "scope_generation": scope.generation if scope else None,
        "epoch_fenced": store is not None and schedule.runtime_epoch != store.runtime_epoch,
        "scope_fenced": scope is not None and schedule.scope_generation != scope.generation,
    }


def scheduled_runs(scope_id: str, schedule_id: str) -> int:
    """The runs ``max_runs`` counts so far, read with the processor's own query (materialized
    nominal, recovery and coalesced occurrences of every generation, and the pending ones)."""
    from durable_schedule.processor.lifecycle import run_lifecycle

    with connection().cursor() as cur:
        return run_lifecycle(cur, "count_runs", {"scope_id": scope_id,
                                                 "schedule_id": schedule_id}).fetchone()[0]


def _buffered(active: ScheduleGeneration | None) -> int | None:
    """``buffer_all``: the active generation's buffered occurrences waiting to run (None for
    the other policies)."""
    if active is None or active.overlap_policy != "buffer_all":
        return None
    return scoping.store_rows(Occurrence).filter(
        scope_id=active.scope_id, schedule_id=active.schedule_id, generation=active.generation,
        state="pending", kind__in=("nominal", "recovery")).count()


def _active_generation(schedule: ScheduleDefinition) -> ScheduleGeneration | None:
    return scoping.store_rows(ScheduleGeneration).filter(
        scope_id=schedule.scope_id, schedule_id=schedule.schedule_id,
        generation=schedule.active_generation).first()


def reissue_possible(schedule: ScheduleDefinition) -> bool:
    """Whether a re-issue without changes can succeed: the active generation's stored spec can
    be read back (``update`` re-uses it; an unreadable one is refused with DS114, and the fix
    is ``schedules.update(spec=...)`` from code, which the detail page says instead)."""
    active = _active_generation(schedule)
    return active is not None and not _unevaluable(active)


def run_now_allowed(schedule: ScheduleDefinition) -> bool:
    """Whether ``schedules.trigger`` would accept a run now under the active generation's
    overlap policy (``evaluation/overlap.py``'s one rule): the slot -- the Work of the latest
    linked occurrence, as the API reads it -- is free and no buffered instant
    (``buffer_all``) or pending coalesced occurrence (``queue_one``) waits; always under
    ``allow_all``. The detail page offers *Run now…* only then,
    never an action the API would refuse with DS150 (a race with the runner is still refused
    on the confirmation page, writing nothing)."""
    from durable_schedule.evaluation.overlap import trigger_allowed
    from durable_schedule.schedules.records import TERMINAL_WORK_STATES

    active = _active_generation(schedule)
    if active is None:
        return False
    latest = (scoping.store_rows(Occurrence).filter(scope_id=schedule.scope_id,
                                        schedule_id=schedule.schedule_id, work_id__isnull=False)
              .order_by("-id").values_list("work_id", flat=True).first())
    occupied = latest is not None and scoping.store_rows(Work).filter(
        scope_id=schedule.scope_id, work_id=latest).exclude(
        state__in=TERMINAL_WORK_STATES).exists()
    coalesced = active.overlap_policy == "queue_one" and scoping.store_rows(Occurrence).filter(
        scope_id=active.scope_id, schedule_id=active.schedule_id, generation=active.generation,
        state="pending", kind="coalesced").exists()
    return trigger_allowed(active.overlap_policy, occupied=occupied,
                           buffered=_buffered(active) or 0, coalesced=int(coalesced))


def _unevaluable(generation: ScheduleGeneration) -> bool:
    try:
        spec_from_json(generation.kind, generation.spec, generation.evaluator_version)
    except DurableError:
        return True
    return False


def unresolved_permit(work: Work) -> WorkPermit | None:
    """The permit a proof resolves: the most recent unresolved admitted one
    (docs/protocol/work.md)."""
    return (
        scoping.store_rows(WorkPermit)
        .filter(scope_id=work.scope_id, work_id=work.work_id, outcome=None)
        .order_by("-permit_no")
        .first()
    )


def work_timeline(work: Work, request=None) -> dict:
    """Permits, quarantined evidence, history and the occurrence that produced the Work."""
    scope_id = work.scope_id
    source = None
    if work.source_occurrence_id is not None:
        source = scoping.store_rows(Occurrence).filter(
            scope_id=scope_id, id=work.source_occurrence_id).first()
    schedule = None
    if source is not None:
        schedule = scoping.store_rows(ScheduleDefinition).filter(
            scope_id=scope_id, schedule_id=source.schedule_id
        ).first()
    return {
        "now": database_now(request),
        "permits": list(
            scoping.store_rows(WorkPermit).filter(scope_id=scope_id, work_id=work.work_id)
            .order_by("permit_no")
        ),
        "unresolved_permit": unresolved_permit(work),
        "quarantine": _with_json(
            scoping.store_rows(WorkQuarantine).filter(scope_id=scope_id, work_id=work.work_id)
            .order_by("-recorded_at", "-id"), result_text="result"),
        "history": _with_json(
            scoping.store_rows(WorkHistory).filter(scope_id=scope_id, work_id=work.work_id)
            .order_by("-recorded_at", "-id")[:RECENT], detail_text="detail"),
        "source_occurrence": source,
        "source_schedule": schedule,
    }
