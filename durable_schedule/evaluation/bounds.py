"""Bounds and limits of a generation: ``start_at``, ``end_at``, ``max_runs`` (docs/schedules.md
"Bounds and limits"). Pure functions: no database, no clock.

* ``start_at`` (inclusive): no instant before it exists for the generation. The API expresses it
  through the cursor (it starts at ``max(accepted_at, start_at - 1 µs)``), so the processor's
  half-open window ``(cursor, cutoff]`` never sees an earlier instant and nothing else changes.
* ``end_at`` (inclusive): no instant after it exists; the window is clipped to it and the
  schedule completes once nothing before it is left.
* ``max_runs``: the number of scheduled runs (materialized nominal, recovery and coalesced
  occurrences, plus a pending coalesced one, which will run) over all generations of the
  schedule; manual runs (``trigger``) do not count. When none is left the schedule completes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from durable_schedule.errors import InvalidBounds, NaiveDatetime
from durable_schedule.evaluation.timeline import as_utc

_ONE_US = timedelta(microseconds=1)
MAX_RUNS_LIMIT = 2**31 - 1


def _bound(value: object, name: str) -> datetime:
    """``start_at`` / ``end_at`` in UTC. A naive one is a bad bound like any other (DS148,
    docs/schedules.md "Bounds and limits"), not the spec fields' DS103."""
    try:
        return as_utc(value, name, wrong_type=InvalidBounds)
    except NaiveDatetime:
        raise InvalidBounds(f"{name} is a naive datetime", field=name) from None


@dataclass(frozen=True)
class Bounds:
    """The bounds of one generation; every field ``None`` means unbounded."""

    start_at: datetime | None = None
    end_at: datetime | None = None
    max_runs: int | None = None

    def __post_init__(self) -> None:
        for name in ("start_at", "end_at"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _bound(value, name))
        runs = self.max_runs
        if runs is not None and (type(runs) is not int or not 1 <= runs <= MAX_RUNS_LIMIT):
            raise InvalidBounds("max_runs must be a positive integer", field="max_runs",
                                got=repr(runs)[:80])
        if self.start_at and self.end_at and self.start_at > self.end_at:
            raise InvalidBounds("start_at must not be after end_at", field="start_at",
                                start_at=self.start_at.isoformat(),
                                end_at=self.end_at.isoformat())

    @property
    def unbounded(self) -> bool:
        return self.start_at is None and self.end_at is None and self.max_runs is None


NONE = Bounds()


def initial_cursor(accepted_at: datetime, cursor: datetime, bounds: Bounds) -> datetime:
    """The cursor a generation starts from: nothing at or before ``cursor`` is evaluated, and
    no instant before ``start_at`` exists."""
    start = max(accepted_at, cursor)
    if bounds.start_at is not None and bounds.start_at > start:
        # Only a start_at after the cursor moves it; comparing first also keeps a start_at at
        # datetime.min from being moved one microsecond below what a datetime can hold.
        start = bounds.start_at - _ONE_US
    return start


def clip(cutoff: datetime, bounds: Bounds) -> datetime:
    """The window's upper end: the cutoff, never past ``end_at``."""
    if bounds.end_at is not None and bounds.end_at < cutoff:
        return bounds.end_at
    return cutoff


def runs_left(bounds: Bounds, runs: int) -> int | None:
    """How many scheduled runs ``max_runs`` still allows (``None``: unlimited)."""
    if bounds.max_runs is None:
        return None
    return max(0, bounds.max_runs - runs)


def exists(instant: datetime, bounds: Bounds) -> bool:
    """Whether ``instant`` of the grid exists for the generation: not before ``start_at``, not
    after ``end_at`` (for a caller outside the cursor's window, such as a backfill)."""
    return ((bounds.start_at is None or instant >= bounds.start_at)
            and (bounds.end_at is None or instant <= bounds.end_at))


def within(instant: datetime | None, bounds: Bounds) -> datetime | None:
    """``instant`` when the bounds allow it, else ``None`` (no further instant exists)."""
    if instant is None or (bounds.end_at is not None and instant > bounds.end_at):
        return None
    return instant
