"""Deterministic jitter (docs/schedules.md "Jitter"). Pure functions: no database, no clock.

A generation may carry ``jitter``: the Work of each nominal occurrence is then due at its nominal
instant plus an offset in ``[0, jitter)``. The offset is a function of the occurrence identity
only -- ``(scope, schedule, generation, kind, first nominal instant)`` -- so every retry and every
runner computes the same value, spreading a fleet of schedules on one grid without a random
number anywhere. It never moves the nominal instant (the identity, the cursor, the Work's
derived id); it is persisted on the occurrence row for the operator. For ``Every`` it must stay
below the interval, so an instant's Work is never due after the next instant.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

from durable_schedule.errors import InvalidJitter
from durable_schedule.evaluation.timeline import Every

_ONE_US = timedelta(microseconds=1)


def validate(jitter: object, spec: object) -> timedelta | None:
    """``jitter`` checked against ``spec`` (DS149): positive, whole microseconds, below an
    ``Every`` interval."""
    if jitter is None:
        return None
    if not isinstance(jitter, timedelta):
        raise InvalidJitter("jitter must be a timedelta", field="jitter",
                            got=type(jitter).__name__)
    if jitter <= timedelta(0):
        raise InvalidJitter("jitter must be greater than zero", field="jitter",
                            value=str(jitter))
    if isinstance(spec, Every) and jitter >= spec.interval:
        raise InvalidJitter("jitter must be shorter than the interval", field="jitter",
                            value=str(jitter), interval=str(spec.interval))
    return jitter


def offset_us(jitter: timedelta | None, scope_id: str, schedule_id: str, generation: int,
              kind: str, first: datetime) -> int:
    """The offset in microseconds, ``0 <= offset < jitter`` (0 without jitter)."""
    if jitter is None:
        return 0
    bound = jitter // _ONE_US
    material = json.dumps([scope_id, schedule_id, generation, kind,
                           first.astimezone(UTC).isoformat(timespec="microseconds")],
                          ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(material.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % bound


def due_at(first: datetime, offset: int) -> datetime:
    """The Work's due time for a nominal instant and its offset."""
    return first + timedelta(microseconds=offset)
