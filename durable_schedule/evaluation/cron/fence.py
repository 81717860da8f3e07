"""The tz-rules fence (docs/schedules.md "Time-zone rules fingerprint").

Before a cron generation is evaluated, its persisted rules snapshot is recomputed with the
rules this process loads, over the same window (acceptance to acceptance + horizon). Equal
fingerprints: evaluate. Different: ``drift()`` returns the evidence the processor suspends with
(reason ``tz_rules_changed``) before the cursor moves or Work exists — the persisted and the
current fingerprint and the first instant after the cursor that the new rules would move.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from durable_schedule.evaluation.cron.spec import Cron
from durable_schedule.evaluation.cron.zones import TzRules, load, rules_at

REASON = "tz_rules_changed"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(second: int) -> str:
    return (_EPOCH + timedelta(seconds=second)).isoformat(timespec="microseconds")


def _wall_iso(wall: int) -> str:
    return (datetime(1970, 1, 1) + timedelta(seconds=wall)).isoformat()


def current_rules(spec: Cron) -> TzRules:
    """The rules snapshot the current tz database gives for the spec's persisted window."""
    return rules_at(load(spec.tz), spec.tz_rules.start, spec.tz_rules.end)


def _differing(old: TzRules, new: TzRules) -> list[tuple[int, int]]:
    """The ``[a, b)`` UTC intervals of the window where the two offset functions differ."""
    points = sorted({old.start, *(t for t, _ in old.changes), *(t for t, _ in new.changes)})
    out: list[tuple[int, int]] = []
    for i, a in enumerate(points):
        b = points[i + 1] if i + 1 < len(points) else old.end + 1
        if old.offset_at(a) != new.offset_at(a):
            if out and out[-1][1] == a:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
    return out


def first_moved(spec: Cron, old: TzRules, new: TzRules, cursor: int) -> dict[str, Any] | None:
    """The first instant after ``cursor`` (new rules) whose UTC offset the old rules give
    differently, i.e. whose wall time the old rules put at another instant; None if none."""
    ev = spec.evaluator()
    for a, b in _differing(old, new):
        if b <= cursor + 1:
            continue
        occ = ev.next_at_or_after(max(a, cursor + 1))
        if occ is not None and occ.utc < b:
            old_utc = occ.wall - old.offset_at(occ.utc)
            return {"wall": _wall_iso(occ.wall), "utc_new_rules": _iso(occ.utc),
                    "utc_old_rules": _iso(old_utc)}
    return None


def check(spec: Any, cursor: datetime) -> tuple[str, dict[str, Any]] | None:
    """The processor's hook: ``(REASON, evidence)`` when a cron generation's tz rules changed,
    None otherwise (and always None for the other spec kinds)."""
    if not isinstance(spec, Cron):
        return None
    evidence = drift(spec, cursor)
    return None if evidence is None else (REASON, evidence)


def drift(spec: Cron, cursor: datetime) -> dict[str, Any] | None:
    """None when the persisted rules still hold; else the suspension evidence."""
    old = spec.tz_rules
    new = current_rules(spec)
    if new.fingerprint == old.fingerprint:
        return None
    cursor_s = (cursor - _EPOCH) // timedelta(seconds=1)
    return {
        "tz": spec.tz, "persisted_fingerprint": old.fingerprint,
        "current_fingerprint": new.fingerprint, "window": [_iso(old.start), _iso(old.end)],
        "first_moved_instant": first_moved(spec, old, new, cursor_s),
        "cursor_utc": cursor.isoformat(timespec="microseconds"),
    }
