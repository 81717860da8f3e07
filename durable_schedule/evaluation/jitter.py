"""Deterministic jitter (docs/schedules.md "Jitter"). Pure functions: no database; the caller
passes the time a ``Cron``'s gaps are read from.

A generation may carry ``jitter``: the Work of each nominal occurrence is then due at its nominal
instant plus an offset in ``[0, jitter)``. The offset is a function of the occurrence identity
only -- ``(scope, schedule, generation, kind, first nominal instant)`` -- so every retry and every
runner computes the same value, spreading a fleet of schedules on one grid without a random
number anywhere. It never moves the nominal instant (the identity, the cursor, the Work's
derived id); it is persisted on the occurrence row for the operator. It must stay below the
gap to the next instant, so an instant's Work is never due after the next instant: for ``Every``
the interval; for ``Cron`` the shortest gap between consecutive instants in the year ahead
(:func:`shortest_cron_gap`), which covers both DST changes of the zone.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

from durable_schedule.errors import InvalidJitter
from durable_schedule.evaluation.cron.spec import Cron, with_seed
from durable_schedule.evaluation.policy import MAX_INSTANT, bounded_add
from durable_schedule.evaluation.timeline import Every

_ONE_US = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def validate(jitter: object, spec: object,
             identity: tuple[str, str] | None = None,
             start: datetime | None = None) -> timedelta | None:
    """``jitter`` checked against ``spec`` (DS149): positive, below an ``Every`` interval or the
    shortest gap of a ``Cron`` (:func:`shortest_cron_gap`) in the year after ``start``.
    ``identity`` (scope, schedule id) gives an ``H`` expression the seed its schedule will run
    with. ``create`` and ``update`` pass their transaction time (the database clock seam,
    ``durable_schedule_clock``) as ``start``; only ``declare``, which runs at import time
    without a database, leaves it to the process clock, and ``sync_schedules`` checks again
    on the database clock through ``create`` / ``update``."""
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
    if isinstance(spec, Cron):
        # Fewer than two instants in the year ahead: the gap is at least the year.
        if identity is not None and spec.pattern.uses_h and spec.h_seed is None:
            spec = with_seed(spec, *identity)
        gap = shortest_cron_gap(spec, jitter, start) or _GAP_HORIZON
        if jitter >= gap:
            raise InvalidJitter("jitter must be shorter than the gap between the expression's"
                                " instants", field="jitter", value=str(jitter),
                                expression=spec.expression, tz=spec.tz, gap=str(gap))
    return jitter


# How far ahead a Cron's gaps are read: a year holds both DST changes of any zone and every
# month length. A spring-forward "shift" can shorten one gap below the expression's spacing
# (01:45 and 02:45 in Europe/Berlin become 00:45 and 01:00 UTC), so the walk must reach the
# changes: the cap covers a year of an hourly expression (8,784 instants); a denser one has its
# shortest gap (at most an hour) within its first instants, and a jitter that long is refused
# at the first gap that short, without walking on.
_GAP_HORIZON = timedelta(days=366)
_GAP_INSTANTS = 10_000


def shortest_cron_gap(spec: Cron, at_most: timedelta | None = None,
                      start: datetime | None = None) -> timedelta | None:
    """The shortest gap between consecutive instants of ``spec`` in the year after ``start``
    (default: the process clock, for a caller without a database), or None when it has fewer
    than two instants there. Stops early at a gap of ``at_most`` or less (the caller refuses
    that jitter anyway). An ``H`` expression without its schedule's seed (``validate`` without
    an identity) is read with seed 0, an approximation: ``H`` moves the instants, and where a
    DST shift meets them their spacing."""
    if spec.pattern.uses_h and spec.h_seed is None:
        spec = Cron(spec.expression, spec.tz, dst_gap=spec.dst_gap, dst_fold=spec.dst_fold,
                    h_seed=0)
    evaluator = spec.evaluator()
    now = (start or datetime.now(UTC)).astimezone(UTC)
    t = int((now - _EPOCH) // timedelta(seconds=1))
    end = t + int(_GAP_HORIZON // timedelta(seconds=1))
    shortest: int | None = None
    previous: int | None = None
    for _ in range(_GAP_INSTANTS):
        occ = evaluator.next_after(t)
        if occ is None or occ.utc > end:
            break
        if previous is not None:
            gap = occ.utc - previous
            shortest = gap if shortest is None else min(shortest, gap)
            if at_most is not None and timedelta(seconds=shortest) <= at_most:
                break
        previous = t = occ.utc
    return None if shortest is None else timedelta(seconds=shortest)


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
    """The Work's due time for a nominal instant and its offset, at most the end of the
    supported UTC range (an instant in the last hours of year 9999 cannot be delayed past it;
    the addition would fail every pass of its schedule)."""
    return bounded_add(first, timedelta(microseconds=offset), MAX_INSTANT)
