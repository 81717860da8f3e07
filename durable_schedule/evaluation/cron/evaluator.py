"""The cron evaluator "ds-cron-v1": the instants of a pattern in a zone under a DST policy.

Pure: no database, no clock. Instants are whole UTC seconds (``int``); wall times are local
seconds since 1970-01-01T00:00 *local* (naive). The set of instants of a pattern is defined
once, and ``next_at_or_after`` / ``prev_at_or_before`` search it by jumps (calendar.py), so one
answer costs O(fields) — a 10-year gap is answered in about the time of one instant:

* a matching wall time that exists once gives its instant;
* one in a spring-forward **gap**: ``dst_gap="shift"`` (default) runs at the first valid instant
  after the gap — several such wall times collapse into that one instant, which also absorbs a
  match exactly at the gap's end; ``"skip"`` drops it;
* one in an autumn **repeat**: an *interval* expression (Cronos: its second, minute or hour
  field has ``*``, a range or a step) runs in both passes; a non-interval one runs once, in the
  first pass (``dst_fold="first"``, default, as Cronos) or the second (``"second"``) — never
  twice for one wall time.

That is Cronos's behaviour (CronExpression.GetOccurrenceConsideringTimeZone), stated as a set.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import date

from durable_schedule.evaluation.cron import calendar as cal
from durable_schedule.evaluation.cron.parser import CronPattern
from durable_schedule.evaluation.cron.zones import MAX_SECOND as _MAX_SECOND
from durable_schedule.evaluation.cron.zones import MIN_SECOND as _MIN_SECOND
from durable_schedule.evaluation.cron.zones import Zone

EVALUATOR_VERSION = "ds-cron-v1"
DST_GAP_POLICIES = ("shift", "skip")
DST_FOLD_POLICIES = ("first", "second")
#: Instants counted one by one in a window; a longer run is reported as "at least" this many.
COUNT_LIMIT = 10_000

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DAY = 86400


@dataclass(frozen=True)
class Occurrence:
    """One instant with the local wall time that produced it (``fold``: 0 first pass, 1
    second pass; ``shifted``: the wall time fell in a gap and ran at the gap's end)."""

    utc: int
    wall: int
    fold: int
    shifted: bool


def _split(wall: int) -> tuple[int, int, int, int]:
    days, sod = divmod(wall, _DAY)
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    return d.year, d.month, d.day, sod


def _join(y: int, m: int, d: int, sod: int) -> int:
    return (date(y, m, d).toordinal() - _EPOCH_ORDINAL) * _DAY + sod


#: The wall times Python can represent (years 1-9999). An instant near either end of the UTC
#: range can have its local wall time outside them (9999-12-31T23:00Z is year 10000 at UTC+14,
#: 0001-01-01T00:00Z is year 0 at UTC-8); a search starts at the nearest end instead of
#: converting a wall time ``datetime`` cannot hold.
_MIN_WALL = _join(1, 1, 1, 0)
_MAX_WALL = _join(9999, 12, 31, _DAY - 1)


#: A UTC offset lies within [-26 h, +26 h] of any other (zones span -12 h to +14 h): a zone
#: transition farther than this from a wall-time span cannot make a wall time in it irregular.
_OFFSET_SPREAD = 26 * 3600


def _regular(zone: Zone, wall_lo: int, wall_hi: int) -> bool:
    """True when every wall time in ``[wall_lo, wall_hi)`` maps to exactly one instant, all
    with one offset: no offset change at ``t`` (from ``before`` to ``after``) puts the walls
    between ``t + before`` and ``t + after`` (its gap or repeated region) into the span."""
    start = max(wall_lo - _OFFSET_SPREAD, _MIN_SECOND)
    end = min(wall_hi + _OFFSET_SPREAD, _MAX_SECOND)
    if start >= end:
        return False
    before = zone.offset_at(start)
    for t, after in zone.changes(start, end):
        if t + min(before, after) < wall_hi and t + max(before, after) > wall_lo:
            return False
        before = after
    return True


class Evaluator:
    """One pattern in one zone under one DST policy."""

    def __init__(self, pattern: CronPattern, zone: Zone, dst_gap: str = "shift",
                 dst_fold: str = "first") -> None:
        self.p, self.zone = pattern, zone
        self.shift = dst_gap == "shift"
        self.takes_first = pattern.interval or dst_fold == "first"
        self.takes_second = pattern.interval or dst_fold == "second"
        self._first_tod = cal.first_time(pattern)
        self._last_tod = cal.last_time(pattern)

    # ------------------------------------------------------------ wall-time search
    def next_wall(self, wall: int, limit: int | None = None) -> int | None:
        """The first matching wall time ``>= wall`` (and ``< limit`` when given)."""
        try:
            y, m, d, sod = _split(wall)
        except (OverflowError, ValueError):
            return None
        p = self.p
        if cal.day_matches(p, y, m, d):
            t = cal.next_time(p, sod)
            if t is not None:
                found = _join(y, m, d, t)
                return found if limit is None or found < limit else None
        if limit is not None and _join(y, m, d, 0) + _DAY >= limit:
            return None
        try:
            nd = date(y, m, d).toordinal() + 1
            nxt = date.fromordinal(nd)
        except (OverflowError, ValueError):
            return None
        day = cal.next_day(p, nxt.year, nxt.month, nxt.day)
        if day is None:
            return None
        found = _join(*day, self._first_tod)
        return found if limit is None or found < limit else None

    def prev_wall(self, wall: int, limit: int | None = None) -> int | None:
        """The last matching wall time ``<= wall`` (and ``>= limit`` when given)."""
        try:
            y, m, d, sod = _split(wall)
        except (OverflowError, ValueError):
            return None
        p = self.p
        if cal.day_matches(p, y, m, d):
            t = cal.prev_time(p, sod)
            if t is not None:
                found = _join(y, m, d, t)
                return found if limit is None or found >= limit else None
        if limit is not None and _join(y, m, d, 0) <= limit:
            return None
        try:
            prv = date.fromordinal(date(y, m, d).toordinal() - 1)
        except (OverflowError, ValueError):
            return None
        day = cal.prev_day(p, prv.year, prv.month, prv.day)
        if day is None:
            return None
        found = _join(*day, self._last_tod)
        return found if limit is None or found >= limit else None

    # ------------------------------------------------------------ instants
    def next_at_or_after(self, s: int) -> Occurrence | None:
        """The first instant ``>= s`` (UTC seconds), or None when there is none."""
        zone = self.zone
        offset = zone.offset_at(s)
        w0 = s + offset
        if w0 > _MAX_WALL:
            return None  # every later instant has a wall time past year 9999
        if w0 < _MIN_WALL:
            s += _MIN_WALL - w0  # no wall time before year 1: start at its first second
            offset = zone.offset_at(s)
            w0 = max(s + offset, _MIN_WALL)
        here = zone.classify(w0)
        wall = w0
        if self.shift and here.kind == "unique":
            # ``s`` may be the very instant a clock springs forward: its wall time is the gap's
            # end, and the gap's own wall times, which shift to ``s``, lie before it.
            before = zone.offset_at(s - 1)
            if before < offset:
                c = self.next_wall(s + before, s + offset)
                if c is not None:
                    return Occurrence(s, c, 0, True)
        if here.kind == "fold":
            first_pass = s == here.first
            if first_pass and self.takes_first:
                c = self.next_wall(w0, here.region_end)
                if c is not None:
                    return Occurrence(c - (w0 - here.first), c, 0, False)
            if self.takes_second:
                start = here.region_start if first_pass else w0
                c = self.next_wall(start, here.region_end)
                if c is not None:
                    return Occurrence(c - (w0 - here.second), c, 1, False)
            wall = here.region_end
        while True:
            c = self.next_wall(wall)
            if c is None:
                return None
            w = zone.classify(c)
            if w.kind == "unique":
                return Occurrence(w.first, c, 0, False)
            if w.kind == "fold":
                if self.takes_first:
                    return Occurrence(w.first, c, 0, False)
                return Occurrence(w.second, c, 1, False)
            if self.shift:
                return Occurrence(w.transition, c, 0, True)
            wall = w.region_end

    def prev_at_or_before(self, s: int) -> Occurrence | None:
        """The last instant ``<= s`` (UTC seconds), or None when there is none."""
        zone = self.zone
        w0 = s + zone.offset_at(s)
        if w0 < _MIN_WALL:
            return None  # every earlier instant has a wall time before year 1
        if w0 > _MAX_WALL:
            s -= w0 - _MAX_WALL  # no wall time after year 9999: start at its last second
            w0 = min(s + zone.offset_at(s), _MAX_WALL)
        here = zone.classify(w0)
        wall = w0
        if here.kind == "fold":
            second_pass = s == here.second and s != here.first
            if second_pass and self.takes_second:
                c = self.prev_wall(w0, here.region_start)
                if c is not None:
                    return Occurrence(c - (w0 - here.second), c, 1, False)
            if self.takes_first:
                start = here.region_end - 1 if second_pass else w0
                c = self.prev_wall(start, here.region_start)
                if c is not None:
                    return Occurrence(c - (w0 - here.first), c, 0, False)
            wall = here.region_start - 1
        while True:
            c = self.prev_wall(wall)
            if c is None:
                return None
            w = zone.classify(c)
            if w.kind == "unique":
                return Occurrence(w.first, c, 0, False)
            if w.kind == "fold":
                if self.takes_second:
                    return Occurrence(w.second, c, 1, False)
                return Occurrence(w.first, c, 0, False)
            if self.shift:
                # Every wall time of this gap collapses into the transition; report the last.
                return Occurrence(w.transition, c, 0, True)
            wall = w.region_start - 1

    def next_after(self, t: int) -> Occurrence | None:
        """The first instant strictly after UTC second ``t``."""
        return self.next_at_or_after(t + 1)

    def upcoming(self, after: int, count: int, *, inclusive: bool = False) -> list[Occurrence]:
        """Up to ``count`` instants after ``after`` (at or after when ``inclusive``)."""
        out: list[Occurrence] = []
        s = after if inclusive else after + 1
        while len(out) < count:
            occ = self.next_at_or_after(s)
            if occ is None:
                break
            out.append(occ)
            s = occ.utc + 1
        return out

    def count(self, lo: int, hi: int) -> int:
        """The exact number of instants in ``(lo, hi]``, for any window.

        A recorded count (the instants a skip drops, ``missed``) must not stop at
        ``COUNT_LIMIT``. Counting one instant at a time would cost a million steps for an
        every-second expression paused for twelve days, so the rest of a local day (else of
        an hour, else of a minute) is counted at once by arithmetic on the matching times of
        day when every wall time in it maps to exactly one instant (no gap or repeated region
        of the zone touches it) and it ends inside the window; instants in or near a gap or a
        repeat are counted one by one, with the rules of ``next_at_or_after``.
        """
        if hi <= lo:
            return 0
        n, s = 0, lo + 1
        while s <= hi:
            occ = self.next_at_or_after(s)
            if occ is None or occ.utc > hi:
                return n
            jumped = None if occ.shifted else self._rest_counted(occ, hi)
            if jumped is None:
                n, s = n + 1, occ.utc + 1
            else:
                n, s = n + jumped[0], jumped[1]
        return n

    def _rest_counted(self, occ: Occurrence, hi: int) -> tuple[int, int] | None:
        """``(instants, next second)`` for the rest of ``occ``'s local day, hour or minute
        (the longest that qualifies, see ``count``), or None when none does."""
        p = self.p
        day_start, sod = divmod(occ.wall, _DAY)
        h, rest = divmod(sod, 3600)
        m, sec = divmod(rest, 60)
        # occ matches, so h, m and sec are values of their fields: count the later ones.
        later_s = len(p.seconds) - bisect_left(p.seconds, sec)
        later_m = len(p.minutes) - bisect_right(p.minutes, m)
        later_h = len(p.hours) - bisect_right(p.hours, h)
        in_minute = later_s
        in_hour = later_m * len(p.seconds) + in_minute
        in_day = later_h * len(p.minutes) * len(p.seconds) + in_hour
        offset = occ.wall - occ.utc
        for end_wall, counted in ((day_start * _DAY + _DAY, in_day),
                                  (occ.wall - sod + (h + 1) * 3600, in_hour),
                                  (occ.wall - sec + 60, in_minute)):
            end = end_wall - offset  # the instant of end_wall, when the span is regular
            if end - 1 <= hi and _regular(self.zone, occ.wall, end_wall):
                return counted, end
        return None

    def window(self, lo: int, hi: int) -> tuple[Occurrence, Occurrence, int, bool] | None:
        """The instants in ``(lo, hi]``: ``(first, last, count, count_exact)`` or None.

        ``first`` and ``last`` are exact for any window; the count is exact up to
        ``COUNT_LIMIT`` instants, beyond which it is that limit and ``count_exact`` is False.
        """
        if hi <= lo:
            return None
        first = self.next_at_or_after(lo + 1)
        if first is None or first.utc > hi:
            return None
        last = self.prev_at_or_before(hi)
        count, s = 1, first.utc
        while s < last.utc and count < COUNT_LIMIT:
            occ = self.next_at_or_after(s + 1)
            s = occ.utc
            count += 1
        return first, last, count, s >= last.utc
