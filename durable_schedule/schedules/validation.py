"""Input validation of the schedule API: every check runs before any database write (as
django-tasks does: "validation before any database write"; docs/protocol/index.md "Quality
bars": "Every bad input gets a clear error with a diagnostic code and changes nothing").

Checks that need the database (existence, revision, the acceptance instant) run inside the
scoped transaction before its first write, and their error rolls that transaction back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

from durable_schedule import conf
from durable_schedule.errors import (
    InvalidArgument,
    InvalidIdentifier,
    InvalidSchedulePolicy,
    JitterPastDeadline,
    NonPositiveDuration,
    ReservedActor,
    TaskScopeMismatch,
    UnknownWorkTarget,
)
from durable_schedule.evaluation.cron.spec import Cron
from durable_schedule.evaluation.cron.zones import require_portable
from durable_schedule.evaluation.decision import MISFIRE_POLICIES, OVERLAP_POLICIES
from durable_schedule.evaluation.timeline import (
    ScheduleSpec,
    refuse_sub_microsecond,
    validate_spec,
)
from durable_schedule.store import identifiers
from durable_schedule.work.queues import validate_queue
from durable_schedule.work.registry import lookup
from durable_schedule.work.target import WorkTarget

MAX_ID = 200
MAX_ACTOR = 200
MAX_REASON = 1000
#: The actor of every generation ``sync_schedules`` writes, and how it recognises what it
#: manages (schedules/declared.py): reserved, so that no other caller can make a schedule look
#: managed (and prunable) by naming it.
RESERVED_ACTOR = "sync_schedules"
_SYNC_WRITING: ContextVar[bool] = ContextVar("durable_schedule_sync_writing", default=False)
_ONE_US = timedelta(microseconds=1)


def _has_control(value: str) -> bool:
    # Categories Cc, Cf, Zl, Zp, Cs: the one identifier rule (store/identifiers.py).
    return identifiers.has_forbidden(value)


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates cannot be stored as text
        return False
    return True


#: The same test for callers outside this module (a paging cursor is no identifier to check).
encodable = _encodable


def schedule_id(value: Any) -> str:
    """1-200 characters, no control characters, no surrounding spaces (DS115)."""
    return identifier(value, "schedule_id")


def identifier(value: Any, field: str) -> str:
    """An identifier (schedule id, request id): the rule of :func:`schedule_id` (DS115)."""
    if not isinstance(value, str):
        raise InvalidIdentifier(f"{field} must be a string", field=field,
                                got=type(value).__name__)
    if not value or len(value) > MAX_ID or value != value.strip():
        raise InvalidIdentifier(f"{field} must be 1-200 characters without surrounding spaces",
                                field=field, value=value[:80])
    bad = identifiers.problem(value) if _encodable(value) else "is not encodable text"
    if bad is not None:
        raise InvalidIdentifier(f"{field} {bad}", field=field, value=value[:80])
    return value


@contextmanager
def writing_as_sync() -> Iterator[None]:
    """The sync path (schedules/declared.py) writes under :data:`RESERVED_ACTOR` inside this."""
    token = _SYNC_WRITING.set(True)
    try:
        yield
    finally:
        _SYNC_WRITING.reset(token)


def actor(value: Any) -> str:
    """The audited actor: ``""`` (no actor named) or at most 200 characters that follow the
    identifier rule (store/identifiers.py): not only whitespace, no control, format or
    separator characters; and not :data:`RESERVED_ACTOR` (DS156) outside the sync path."""
    if not isinstance(value, str):
        raise InvalidArgument("actor must be a string", field="actor", got=type(value).__name__)
    if len(value) > MAX_ACTOR or not _encodable(value) or (
            value and identifiers.problem(value) is not None):
        raise InvalidArgument("actor must be empty or at most 200 characters, not only "
                              "whitespace, without control, format or separator characters",
                              field="actor", value=value[:80])
    if value == RESERVED_ACTOR and not _SYNC_WRITING.get():
        raise ReservedActor("the actor name is reserved for sync_schedules", actor=value)
    return value


def reason(value: Any, field: str = "reason") -> str:
    """An operator's note (a suspension reason, a pause note): non-blank text of at most 1000
    characters. ``field``: the argument's name, which the error names."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{field} must be a non-blank string", field=field)
    if len(value) > MAX_REASON or not _encodable(value) or "\x00" in value:
        raise InvalidArgument(f"{field} must be at most 1000 characters of text", field=field)
    return value


def revision(value: Any, *, optional: bool = False) -> int | None:
    """An expected revision: a positive int (``bool`` is not an int here)."""
    if value is None and optional:
        return None
    if type(value) is not int or value < 1:
        raise InvalidArgument("expected_revision must be a positive integer",
                              field="expected_revision", got=repr(value)[:80])
    return value


def buffer_limit(overlap: str, value: Any) -> int | None:
    """The buffer limit a generation with ``overlap`` stores: for ``buffer_all`` the given
    value (``None``: the default, 100), an integer from 1 to 1000; for any other policy none
    may be given (InvalidBufferLimit, DS154)."""
    from durable_schedule.evaluation.decision import check_buffer_limit
    from durable_schedule.evaluation.overlap import DEFAULT_BUFFER_LIMIT

    if overlap == "buffer_all" and value is None:
        value = DEFAULT_BUFFER_LIMIT
    check_buffer_limit(overlap, value)
    return value


def policies(overlap: Any, misfire: Any) -> tuple[str, str]:
    """Overlap ``queue_one``, ``skip``, ``buffer_all`` or ``allow_all``; misfire ``run_once``
    or ``skip`` (DS111)."""
    if not isinstance(overlap, str) or overlap not in OVERLAP_POLICIES:
        raise InvalidSchedulePolicy("unknown overlap policy", overlap=repr(overlap)[:80])
    if not isinstance(misfire, str) or misfire not in MISFIRE_POLICIES:
        raise InvalidSchedulePolicy("unknown misfire policy", misfire=repr(misfire)[:80])
    return overlap, misfire


def safety_window(value: Any) -> timedelta:
    """A positive timedelta; ``None`` takes ``DURABLE_SCHEDULE['SAFETY_WINDOW']``."""
    if value is None:
        value = conf.safety_window()
    if not isinstance(value, timedelta):
        raise InvalidArgument("safety_window must be a timedelta", field="safety_window",
                              got=type(value).__name__)
    refuse_sub_microsecond(value, "safety_window")
    if value // _ONE_US <= 0:
        raise NonPositiveDuration("safety_window must be greater than zero",
                                  field="safety_window", value=str(value))
    return value


def spec(value: Any) -> ScheduleSpec:
    """A spec a caller gives for a new generation: valid fields (DS101, DS102, DS103) and, for
    a Cron, a zone name every host reads alike (DS126). Stored specs are read through
    ``validate_spec`` alone, so one that names a host-dependent zone stays evaluable."""
    checked = validate_spec(value)
    if isinstance(checked, Cron):
        require_portable(checked.tz)
    return checked


def target(value: Any, scope: str | None = None) -> dict[str, Any]:
    """A registered Work target: returns its JSON snapshot (DS105 when unknown).

    The target is the value ``definition.target(payload=...)`` returns; its work name and
    version must be registered in this process (``work.define``), so a schedule can never be
    accepted for Work that no worker could run. A task target (``tasks.target()``) of a task
    with a fixed scope belongs to a schedule of that ``scope`` only (DS272, docs/tasks.md
    "Periodic tasks"): every occurrence's Work goes into the schedule's scope.
    """
    if not isinstance(value, WorkTarget):
        raise UnknownWorkTarget("target must be a WorkTarget from definition.target(payload=...)",
                                got=type(value).__name__)
    if lookup(value.work_name, value.work_version) is None:
        raise UnknownWorkTarget("the target's Work is not registered",
                                work_name=value.work_name, work_version=value.work_version)
    # A target built as WorkTarget(...) directly skipped definition.target's check: the same
    # rule as enqueue's (DS244), so no generation stores a queue enqueue would refuse.
    validate_queue(value.queue)
    fixed = getattr(value, "fixed_scope", None)
    if fixed is not None and scope is not None and fixed != scope:
        raise TaskScopeMismatch(
            "the target's task has a fixed scope and the schedule is in another: every run "
            "would go into the schedule's scope, not the task's",
            work_name=value.work_name, task_scope=fixed, schedule_scope=scope)
    return value.to_json()


def jitter_within_deadline(jitter: timedelta | None, target_json: Any) -> None:
    """DS155 when ``jitter`` is not shorter than the target's ``deadline_after``.

    A pass materializes an instant's occurrence at or after the instant and gives its Work the
    deadline ``materialization + deadline_after`` and the due time ``instant + offset`` with
    ``0 <= offset < jitter``: a materialization at the instant itself puts the Work due up to
    ``jitter - 1 us`` after it, so a jitter of ``deadline_after`` or more leaves such Work no
    admission window at all (``due_at >= deadline``, refused with DS218 at enqueue) or one of a
    microsecond. The schedule commands refuse it before any write; a pass quarantines a stored
    generation of that shape (docs/schedules.md "Jitter")."""
    if jitter is None or not isinstance(target_json, dict):
        return
    after_us = target_json.get("deadline_after_us")
    if type(after_us) is not int:
        return
    try:
        after = timedelta(microseconds=after_us)
    except OverflowError:
        return  # longer than any jitter timedelta can be
    if jitter >= after:
        raise JitterPastDeadline(
            "jitter must be shorter than the target's deadline_after: an instant's Work could "
            "otherwise be due at or after its own deadline", field="jitter", value=str(jitter),
            deadline_after=str(after))
