"""Microsecond ISO-8601 text of instants, each distinct (instant, offset) formatted once.

A batched schedule pass writes the same few instants again and again: each schedule's decision
evidence (cursor, cutoff, earliest, latest), its history detail (first, last, cursor, next due),
its fence evidence and its occurrence identity, and the schedules of one batch share most of
them. ``datetime.isoformat(timespec="microseconds")`` costs about 2 µs (the timespec argument is
parsed per call), 11 calls per schedule: about 13 % of the pass's client time
(docs/benchmarks.md "Batched schedule passes, profiled"). A cache lookup costs a fifth of that.

The text is a pure function of the wall time and the UTC offset, and equal aware datetimes with
equal offsets have equal wall times, so ``(value, value.utcoffset())`` is an exact key (a naive
datetime's offset is None; naive and aware never compare equal). Subclasses of datetime may
format themselves otherwise and are formatted directly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


@lru_cache(maxsize=4096)
def _cached(value: datetime, _offset: object) -> str:
    return value.isoformat(timespec="microseconds")


#: The texts of UTC instants (nearly every instant a pass formats), keyed by the value alone:
#: equal datetimes in ``datetime.UTC`` have equal wall times, whatever their fold, and a plain
#: dict lookup costs a quarter of the lru_cache call with its offset argument. Cleared when
#: full (a pass's instants are few; a long-running process must not grow it without bound).
_UTC_TEXTS: dict[datetime, str] = {}
_UTC_TEXTS_MAX = 4096


def iso_us(value: datetime | None) -> str | None:
    """``value.isoformat(timespec="microseconds")``; None for None."""
    if value is None:
        return None
    if type(value) is not datetime:
        return value.isoformat(timespec="microseconds")
    if value.tzinfo is UTC:
        text = _UTC_TEXTS.get(value)
        if text is None:
            if len(_UTC_TEXTS) >= _UTC_TEXTS_MAX:
                _UTC_TEXTS.clear()
            text = _UTC_TEXTS[value] = value.isoformat(timespec="microseconds")
        return text
    return _cached(value, value.utcoffset())


def utc_iso_us(value: datetime) -> str:
    """``value.astimezone(UTC).isoformat(timespec="microseconds")`` (aware ``value``)."""
    if type(value) is not datetime or value.tzinfo is None:
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    return _cached(value.astimezone(UTC), UTC_OFFSET)


UTC_OFFSET = UTC.utcoffset(None)
