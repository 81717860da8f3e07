"""Time-zone rules for cron: loading (with a test seam), wall-time classification, and the
rules fingerprint (docs/schedules.md "Time-zone rules fingerprint").

Zones are IANA zones loaded through ``zoneinfo``. ``zoneinfo`` prefers the system tz database
over the ``tzdata`` package, so a tzdata *version* does not say which rules were used; what is
persisted instead is what the evaluator actually saw: the zone's UTC offset at the acceptance
instant and every change of it from acceptance to ``FINGERPRINT_HORIZON`` later, as
``(UTC second, new offset)`` pairs, and the SHA-256 of their canonical text (``fingerprint``).
The processor recomputes that list with the rules it has before evaluating; any difference
suspends the schedule (``tz_rules_changed``) instead of silently moving instants.

Finding the changes: the offset is sampled every ``SAMPLE_STEP`` (6 hours) and each change is
bisected to the second. This finds every transition except a pair less than 6 hours apart that
restores the previous offset; tzdata's future rules (a POSIX rule with at most two changes a
year, months apart) have none.

Test seam: ``override(name, path)`` makes ``load(name)`` read that TZif file (a modified copy
simulates a tz database update) until the context exits.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from durable_schedule.errors import UnknownTimeZone

FINGERPRINT_VERSION = "ds-tz-fp-v1"
FINGERPRINT_HORIZON = timedelta(days=3653)  # ten years from the generation's acceptance
SAMPLE_STEP = 6 * 3600
MAX_ZONE_NAME = 100
_MIN_SECOND = int((datetime(2, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC))
                  .total_seconds())
_MAX_SECOND = int((datetime(9999, 12, 30, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC))
                  .total_seconds())
#: The UTC seconds the zone functions clamp to (the evaluator's counting stays inside them).
MIN_SECOND, MAX_SECOND = _MIN_SECOND, _MAX_SECOND

_overrides: dict[str, str] = {}
_lock = threading.Lock()


@contextlib.contextmanager
def override(name: str, path: str):
    """Test seam: within the block, zone ``name`` is read from the TZif file at ``path``."""
    with _lock:
        previous = _overrides.get(name)
        _overrides[name] = path
    try:
        yield
    finally:
        with _lock:
            if previous is None:
                _overrides.pop(name, None)
            else:
                _overrides[name] = previous


# Names whose meaning is the host's, not IANA's: "localtime" is whatever /etc/localtime points
# at, "posixrules" is a build-time link (absent in recent tz databases) and the "posix/" and
# "right/" trees are distribution copies ("right/" with leap seconds). Two hosts can read the
# same name as different rules, so a new schedule may not name them (docs/schedules.md "Cron").
_HOST_NAMES = frozenset({"localtime", "posixrules"})
_HOST_TREES = ("posix/", "right/")


def host_dependent(name: str) -> bool:
    """True for a zone name whose rules depend on the host (refused for new schedules)."""
    return name in _HOST_NAMES or name.startswith(_HOST_TREES)


# "Factory" is tzdata's placeholder for "no zone configured" (UTC offset 0, abbreviation "-00"):
# a schedule naming it almost certainly meant another zone, so a new schedule may not name it.
_PLACEHOLDER_NAMES = frozenset({"Factory"})


def require_portable(name: str) -> None:
    """DS126 for a host-dependent or placeholder zone name. Only acceptance calls this: a
    stored schedule that already names such a zone keeps loading (history is never
    reinterpreted)."""
    if host_dependent(name):
        raise UnknownTimeZone(f"time zone {name!r} depends on the host; name the IANA zone "
                              "itself (e.g. 'Europe/Berlin')", tz=name[:80],
                              reason="host_dependent_zone")
    if name in _PLACEHOLDER_NAMES:
        raise UnknownTimeZone(f"time zone {name!r} is the tz database's placeholder for an "
                              "unset zone; name the zone meant (e.g. 'Etc/UTC' or "
                              "'Europe/Berlin')", tz=name[:80], reason="placeholder_zone")


@lru_cache(maxsize=64)
def _from_file(name: str, path: str, stamp: tuple[int, int]) -> zoneinfo.ZoneInfo:
    with open(path, "rb") as f:
        return zoneinfo.ZoneInfo.from_file(f, key=name)


def load(name: object) -> Zone:
    """The :class:`Zone` for an IANA name; DS126 when it is not a loadable zone."""
    if not isinstance(name, str) or not name or len(name) > MAX_ZONE_NAME:
        raise UnknownTimeZone("tz must be an IANA zone name", tz=repr(name)[:80])
    path = _overrides.get(name)
    try:
        if path is not None:
            st = os.stat(path)
            info = _from_file(name, path, (st.st_mtime_ns, st.st_size))
        else:
            info = zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise UnknownTimeZone(f"unknown time zone {name!r}", tz=name[:80],
                              cause=type(exc).__name__) from None
    return _zone(info)


@lru_cache(maxsize=256)
def _zone(info: zoneinfo.ZoneInfo) -> Zone:
    return Zone(info)


@dataclass(frozen=True)
class Wall:
    """How a local wall time maps to UTC: ``kind`` unique, gap or fold.

    unique: ``first == second`` is the instant. fold: ``first`` (earlier pass) and ``second``.
    gap: no instant; ``transition`` is the first valid instant after the gap, ``gap_end`` its
    wall time and ``gap_start`` the first wall time that does not exist.
    """

    kind: str
    first: int
    second: int
    transition: int = 0
    region_start: int = 0  # wall time where the gap or the repeated region begins
    region_end: int = 0    # first wall time after it


class Zone:
    """One loaded zone: offsets by UTC second, wall-time classification, transitions."""

    def __init__(self, info: zoneinfo.ZoneInfo) -> None:
        self.info = info
        self.name = str(info.key)
        self._years: dict[int, tuple[tuple[int, int, int], ...]] = {}

    def offset_at(self, u: int) -> int:
        """UTC offset in seconds at UTC second ``u``."""
        u = min(max(u, _MIN_SECOND), _MAX_SECOND)
        dt = datetime.fromtimestamp(u, UTC).astimezone(self.info)
        return int(dt.utcoffset().total_seconds())

    def _wall_offsets(self, wall: int) -> tuple[int, int]:
        naive = datetime(1970, 1, 1) + timedelta(seconds=wall)
        o0 = naive.replace(tzinfo=self.info, fold=0).utcoffset()
        o1 = naive.replace(tzinfo=self.info, fold=1).utcoffset()
        return int(o0.total_seconds()), int(o1.total_seconds())

    def _transition_between(self, lo: int, hi: int) -> int:
        """The first UTC second in ``(lo, hi]`` whose offset differs from ``offset_at(lo)``."""
        base = self.offset_at(lo)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.offset_at(mid) == base:
                lo = mid
            else:
                hi = mid
        return hi

    def classify(self, wall: int) -> Wall:
        o0, o1 = self._wall_offsets(wall)
        if o0 == o1:
            u = wall - o0
            return Wall("unique", u, u)
        if o0 > o1:  # repeated: fold=0 is the earlier pass
            t = self._transition_between(wall - o0, wall - o1)
            return Wall("fold", wall - o0, wall - o1, t, t + o1, t + o0)
        t = self._transition_between(wall - o1, wall - o0)
        return Wall("gap", t, t, t, t + o0, t + o1)

    # ------------------------------------------------------------ transitions, fingerprint
    def _year_changes(self, year: int) -> tuple[tuple[int, int, int], ...]:
        """``(utc second, offset before, offset after)`` of every change within UTC ``year``."""
        cached = self._years.get(year)
        if cached is not None:
            return cached
        start = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
        end = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp()) if year < 9999 \
            else _MAX_SECOND
        changes = []
        prev_t, prev_o = start, self.offset_at(start)
        t = start
        while t < end:
            t = min(t + SAMPLE_STEP, end)
            o = self.offset_at(t)
            if o != prev_o:
                at = self._transition_between(prev_t, t)
                changes.append((at, prev_o, self.offset_at(at)))
                # Re-sample from the change so two changes inside one step are both seen.
                prev_t, prev_o = at, self.offset_at(at)
                t = at
                continue
            prev_t, prev_o = t, o
        result = tuple(changes)
        self._years[year] = result
        return result

    def changes(self, start: int, end: int) -> list[tuple[int, int]]:
        """``(utc second, new offset)`` of every offset change in ``(start, end]``."""
        first = datetime.fromtimestamp(start, UTC).year
        last = datetime.fromtimestamp(end, UTC).year
        out = []
        for year in range(first, last + 1):
            out.extend((t, after) for t, _, after in self._year_changes(year)
                       if start < t <= end)
        return out


@dataclass(frozen=True)
class TzRules:
    """The rules a generation was accepted with, as persisted (docs/schedules.md)."""

    zone: str
    start: int          # UTC second: the acceptance instant, floored
    end: int            # start + FINGERPRINT_HORIZON
    offset: int         # offset at start
    changes: tuple[tuple[int, int], ...]
    fingerprint: str

    def offset_at(self, u: int) -> int:
        """The offset these rules give at ``u`` (within ``[start, end]``)."""
        o = self.offset
        for t, after in self.changes:
            if t > u:
                break
            o = after
        return o

    def to_json(self) -> dict:
        return {"version": FINGERPRINT_VERSION, "zone": self.zone, "from": self.start,
                "to": self.end, "offset": self.offset,
                "changes": [[t, o] for t, o in self.changes], "fingerprint": self.fingerprint}


def canonical_text(start: int, end: int, offset: int, changes) -> str:
    """The bytes the fingerprint hashes (UTF-8): one line each, never to change for v1."""
    lines = [FINGERPRINT_VERSION, f"from {start}", f"to {end}", f"offset {offset}"]
    lines += [f"{t} {o}" for t, o in changes]
    return "\n".join(lines) + "\n"


def fingerprint_of(start: int, end: int, offset: int, changes) -> str:
    return hashlib.sha256(canonical_text(start, end, offset, changes).encode()).hexdigest()


def rules_at(zone: Zone, accepted_second: int, end: int | None = None) -> TzRules:
    """The rules snapshot of ``zone`` for a generation accepted at ``accepted_second``, over
    ``[accepted_second, end]`` (default: the horizon; the fence passes the persisted end)."""
    if end is None:
        end = min(accepted_second + int(FINGERPRINT_HORIZON.total_seconds()), _MAX_SECOND)
    offset = zone.offset_at(accepted_second)
    changes = tuple(zone.changes(accepted_second, end))
    return TzRules(zone.name, accepted_second, end, offset, changes,
                   fingerprint_of(accepted_second, end, offset, changes))
