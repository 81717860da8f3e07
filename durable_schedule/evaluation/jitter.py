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
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from durable_schedule.errors import InvalidJitter
from durable_schedule.evaluation.cron.evaluator import Evaluator
from durable_schedule.evaluation.cron.spec import Cron, with_seed
from durable_schedule.evaluation.policy import MAX_INSTANT, bounded_add
from durable_schedule.evaluation.timeline import Every, refuse_sub_microsecond

_ONE_US = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


#: The longest jitter whose offsets (``0 <= offset < jitter``, in microseconds) fit the bigint
#: ``jitter_us`` of an occurrence row: 2**63 microseconds, about 292,271 years.
MAX_JITTER = timedelta(microseconds=2**63)


def check_range(jitter: timedelta | None) -> None:
    """DS149 unless ``jitter`` is None or ``0 < jitter <= MAX_JITTER``. A pass calls it on a
    stored generation's jitter (written by hand: the commands never accept one outside this
    range) before anything is written, so the schedule is quarantined instead of failing every
    pass on an offset its occurrence row cannot hold (docs/schedules.md "Jitter")."""
    if jitter is None:
        return
    if jitter <= timedelta(0) or jitter > MAX_JITTER:
        raise InvalidJitter("jitter must be greater than zero and at most 2**63 microseconds:"
                            " its offsets are stored as a bigint of microseconds",
                            field="jitter", value=str(jitter), maximum=str(MAX_JITTER))


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
    refuse_sub_microsecond(jitter, "jitter")
    if jitter <= timedelta(0):
        raise InvalidJitter("jitter must be greater than zero", field="jitter",
                            value=str(jitter))
    check_range(jitter)
    if isinstance(spec, Every) and jitter >= spec.interval:
        raise InvalidJitter("jitter must be shorter than the interval", field="jitter",
                            value=str(jitter), interval=str(spec.interval))
    if isinstance(spec, Cron):
        if identity is not None and spec.pattern.uses_h and spec.h_seed is None:
            spec = with_seed(spec, *identity)
        # Never more than a year: the gaps read are those of the year ahead (and the one after
        # it), and a rarer expression's later gaps vary with the calendar (29 February).
        gap = min(shortest_cron_gap(spec, jitter, start) or _GAP_HORIZON, _GAP_HORIZON)
        if jitter >= gap:
            raise InvalidJitter("jitter must be shorter than the gap between the expression's"
                                " instants", field="jitter", value=str(jitter),
                                expression=spec.expression, tz=spec.tz, gap=str(gap))
    return jitter


# How far ahead a Cron's gaps are read: a year holds both DST changes of any zone and every
# month length. A spring-forward "shift" can shorten one gap below the expression's spacing
# (01:45 and 02:45 in Europe/Berlin become 00:45 and 01:00 UTC), so besides the walk from the
# start (the gaps of the expression itself: a denser one than hourly has them in its first
# instants), the instants around each offset change of the year are walked on their own,
# however far ahead it lies. Each walk stops after _GAP_INSTANTS instants.
_GAP_HORIZON = timedelta(days=366)
_GAP_INSTANTS = 10_000
#: Cron instants are whole seconds: no gap is shorter, so a walk that found one can stop.
_SHORTEST_POSSIBLE = 1


def _instants(evaluator: Evaluator, after: int, until: int) -> Iterator[int]:
    """The consecutive instants after UTC second ``after``, up to the first one past ``until``
    and at least two: the gap from the last instant up to ``until`` to the next one counts
    (a yearly expression's only instant in the year ahead is a year from the next one, or a
    day less)."""
    for n in range(_GAP_INSTANTS):
        occ = evaluator.next_after(after)
        if occ is None:
            return
        yield occ.utc
        if occ.utc > until and n >= 1:
            return
        after = occ.utc


def _shortest(instants: Iterator[int], shortest: int | None,
              at_most: int | None) -> int | None:
    """``shortest`` lowered by the gaps between consecutive ``instants``; stops early at a gap of
    ``at_most`` seconds or less (the caller refuses that jitter anyway) or of one second."""
    previous = None
    for u in instants:
        if previous is not None:
            gap = u - previous
            shortest = gap if shortest is None else min(shortest, gap)
            if shortest <= _SHORTEST_POSSIBLE or (at_most is not None and shortest <= at_most):
                break
        previous = u
    return shortest


def shortest_cron_gap(spec: Cron, at_most: timedelta | None = None,
                      start: datetime | None = None) -> timedelta | None:
    """The shortest gap between consecutive instants of ``spec`` in the year after ``start``
    (default: the process clock, for a caller without a database): the gaps from the start, the
    gap from the year's last instant to the next one (or between the first two, when the year
    has none), and the gaps around each offset change of the zone in the year. None when the
    expression has fewer than two instants. Stops early at a gap of ``at_most`` or less (the
    caller refuses that jitter anyway). An ``H`` expression without its schedule's seed
    (``validate`` without an identity) is read with seed 0, an approximation: ``H`` moves the
    instants, and where a DST shift meets them their spacing."""
    if spec.pattern.uses_h and spec.h_seed is None:
        spec = Cron(spec.expression, spec.tz, dst_gap=spec.dst_gap, dst_fold=spec.dst_fold,
                    h_seed=0)
    evaluator = spec.evaluator()
    now = (start or datetime.now(UTC)).astimezone(UTC)
    t = int((now - _EPOCH) // timedelta(seconds=1))
    end = t + int(_GAP_HORIZON // timedelta(seconds=1))
    limit = None if at_most is None else at_most // timedelta(seconds=1)
    shortest = _shortest(_instants(evaluator, t, end), None, limit)
    zone = evaluator.zone
    for change, after in zone.changes(t, end):
        if shortest is not None and (shortest <= _SHORTEST_POSSIBLE
                                     or (limit is not None and shortest <= limit)):
            break
        # Walls shifted by the change map within `shift` of it: walk from the instant before
        # them to the one after them.
        shift = abs(after - zone.offset_at(change - 1))
        before = evaluator.prev_at_or_before(change - shift - 1)
        first = change - shift - 2 if before is None else before.utc - 1
        shortest = _shortest(_instants(evaluator, first, change + shift + 1), shortest, limit)
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
