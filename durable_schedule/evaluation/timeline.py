"""Schedule specs and their nominal instants (docs/protocol/schedules.md "Authoritative time",
docs/protocol/schedules.md rule S2).

Three spec kinds exist in evaluator version ``ds-eval-v1`` (a fourth, ``Cron``, has its own
evaluator ``ds-cron-v1`` in ``evaluation/cron/``; this module dispatches to it):

* ``At(when)`` — one instant, the given UTC value persisted unchanged.
* ``After(delay)`` — one instant, ``accepted_at_utc + delay``; ``accepted_at_utc`` is the
  PostgreSQL ``transaction_timestamp()`` of the create/update command, never a Python clock.
* ``Every(interval, anchor=None)`` — the instants ``anchor + k·interval`` for every integer
  ``k >= 0``; the anchor defaults to ``accepted_at_utc``.

The materialization cursor starts at ``accepted_at_utc`` and a pass evaluates the half-open
window ``(cursor, cutoff]`` (docs/protocol/schedules.md rule S1). Consequences worth stating once:

* ``Every`` with the default anchor: ``k = 0`` is ``accepted_at_utc`` itself, which equals the
  initial cursor and so is never in a window; the first fire is ``accepted_at + interval``.
* ``Every`` with an explicit past anchor: the grid is kept, and the first fire is the first grid
  instant strictly after ``accepted_at_utc`` (nothing before acceptance is ever back-filled).
* ``Every`` with a future anchor: the anchor itself (``k = 0``) is the first fire; there is no
  instant before it.
* ``At`` at or before ``accepted_at_utc`` never fires (its instant is not after the cursor).

All arithmetic is on integer microseconds since the Unix epoch, so every function here is O(1):
a window holding a million instants is counted, never enumerated. Instants that would fall
beyond Python's ``datetime.max`` do not exist for this evaluator (no cutoff can reach them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from durable_schedule.errors import (
    DurableError,
    InvalidArgument,
    InvalidScheduleSpec,
    NaiveDatetime,
    NonPositiveDuration,
    ScheduleError,
    SubMicrosecondPrecision,
    UnevaluableGeneration,
)
from durable_schedule.evaluation.cron import spec as cron_spec
from durable_schedule.evaluation.cron.evaluator import EVALUATOR_VERSION as CRON_EVALUATOR_VERSION
from durable_schedule.evaluation.cron.evaluator import Occurrence
from durable_schedule.evaluation.cron.spec import Cron

EVALUATOR_VERSION = "ds-eval-v1"
"""Persisted with each generation; evaluation refuses any other version (docs/protocol/schedules.md
"Clock and evaluator fences": a mismatch suspends instead of silently reinterpreting history)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
# The only timestamp form spec_to_json writes: UTC, six fractional digits, ASCII digits only.
_CANONICAL_ISO = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\+00:00"
)


# ---------------------------------------------------------------- conversions
def as_utc(
    value: Any, name: str, wrong_type: type[DurableError] = InvalidScheduleSpec
) -> datetime:
    """Return ``value`` converted to UTC; naive datetimes are refused (DS103).

    A non-datetime raises ``wrong_type``: ``InvalidScheduleSpec`` for spec fields,
    ``InvalidArgument`` for the arguments of the evaluation functions.
    """
    if not isinstance(value, datetime):
        raise wrong_type(f"{name} must be a datetime", field=name, got=type(value).__name__)
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetime(f"{name} is a naive datetime", field=name)
    refuse_sub_microsecond(value, name)
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise wrong_type(f"{name} is outside the representable UTC range", field=name) from None
    if type(utc) is not datetime:
        # A subclass (pandas' Timestamp) may format or compare otherwise: store a plain value.
        utc = datetime.combine(utc.date(), utc.time(), UTC)
    return utc


def refuse_sub_microsecond(value: datetime | timedelta, name: str) -> None:
    """DS104 for a datetime or timedelta finer than a microsecond (pandas' ``nanosecond`` /
    ``nanoseconds``): PostgreSQL keeps microseconds, and truncating would move the value
    silently (docs/diagnostics.md)."""
    if type(value) in (datetime, timedelta):
        return  # the plain types hold microseconds at most
    if getattr(value, "nanosecond", 0) or getattr(value, "nanoseconds", 0):
        raise SubMicrosecondPrecision(f"{name} is finer than a microsecond", field=name)


def _positive_us(value: Any, name: str) -> int:
    """Return a positive ``timedelta`` as integer microseconds (DS102 when not positive)."""
    if not isinstance(value, timedelta):
        raise InvalidScheduleSpec(f"{name} must be a timedelta", field=name,
                                  got=type(value).__name__)
    refuse_sub_microsecond(value, name)
    micros = value // _ONE_US
    if micros <= 0:
        raise NonPositiveDuration(f"{name} must be greater than zero", field=name, value=str(value))
    return micros


def to_us(value: datetime) -> int:
    """Integer microseconds since the Unix epoch of an aware datetime (exact, no float)."""
    return (value - _EPOCH) // _ONE_US


def from_us(micros: int) -> datetime | None:
    """The UTC datetime for ``micros``, or ``None`` when Python cannot represent it."""
    try:
        return _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        return None


def _arg_us(value: Any, name: str) -> int:
    """Microseconds of a datetime argument of the evaluation functions (not a spec field)."""
    return to_us(as_utc(value, name, wrong_type=InvalidArgument))


# ---------------------------------------------------------------- specs
@dataclass(frozen=True)
class At:
    """One nominal instant: ``when``, normalized to UTC and otherwise persisted unchanged."""

    when: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "when", as_utc(self.when, "when"))


@dataclass(frozen=True)
class After:
    """One nominal instant: ``accepted_at_utc + delay`` (docs/protocol/schedules.md: the only anchor
    for After)."""

    delay: timedelta

    def __post_init__(self) -> None:
        _positive_us(self.delay, "delay")


@dataclass(frozen=True)
class Every:
    """Nominal instants ``anchor + k·interval``, ``k >= 0``; anchor defaults to acceptance."""

    interval: timedelta
    anchor: datetime | None = None

    def __post_init__(self) -> None:
        _positive_us(self.interval, "interval")
        if self.anchor is not None:
            object.__setattr__(self, "anchor", as_utc(self.anchor, "anchor"))


ScheduleSpec = At | After | Every | Cron
_KINDS: dict[type, str] = {At: "at", After: "after", Every: "every", Cron: "cron"}
#: The evaluator version each kind's generations persist (and the only one evaluated).
EVALUATOR_VERSIONS = {"at": EVALUATOR_VERSION, "after": EVALUATOR_VERSION,
                      "every": EVALUATOR_VERSION, "cron": CRON_EVALUATOR_VERSION}


def kind_of(spec: Any) -> str:
    """The persisted kind of ``spec``: ``"at"``, ``"after"``, ``"every"`` or ``"cron"``."""
    for cls, kind in _KINDS.items():
        if isinstance(spec, cls):
            return kind
    raise InvalidScheduleSpec("spec must be At, After, Every or Cron", got=type(spec).__name__)


def evaluator_version_of(spec: Any) -> str:
    """The evaluator version a generation of ``spec`` persists."""
    return EVALUATOR_VERSIONS[kind_of(spec)]


def bind_spec(spec: ScheduleSpec, scope: str, schedule_id: str,
              accepted_at: datetime) -> ScheduleSpec:
    """The spec as a generation accepted at ``accepted_at`` persists it: a ``Cron`` gets its
    ``H`` seed and tz-rules snapshot (evaluation/cron/spec.py); other kinds are unchanged."""
    if isinstance(spec, Cron):
        return cron_spec.bind(spec, scope, schedule_id, accepted_at)
    return spec


def validate_spec(spec: Any) -> ScheduleSpec:
    """Re-check every field of ``spec`` and return it with datetimes normalized to UTC.

    Raises ``InvalidScheduleSpec`` (DS101) for a wrong type, ``NaiveDatetime`` (DS103) and
    ``NonPositiveDuration`` (DS102). Re-construction also catches a frozen instance whose
    fields were forced with ``object.__setattr__``.
    """
    kind = kind_of(spec)
    if kind == "at":
        return At(spec.when)
    if kind == "after":
        return After(spec.delay)
    if kind == "cron":
        return Cron(spec.expression, spec.tz, dst_gap=spec.dst_gap, dst_fold=spec.dst_fold,
                    h_seed=spec.h_seed, tz_rules=spec.tz_rules)
    return Every(spec.interval, spec.anchor)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def spec_to_json(spec: ScheduleSpec) -> dict[str, Any]:
    """The JSON-safe persisted form of a spec; durations are integer microseconds."""
    spec = validate_spec(spec)
    if isinstance(spec, At):
        return {"at": _iso(spec.when)}
    if isinstance(spec, After):
        return {"delay_us": spec.delay // _ONE_US}
    if isinstance(spec, Cron):
        return cron_spec.to_json(spec)
    anchor = None if spec.anchor is None else _iso(spec.anchor)
    return {"interval_us": spec.interval // _ONE_US, "anchor": anchor}


# ---------------------------------------------------------------- stored data
_KEYS = {"at": {"at"}, "after": {"delay_us"}, "every": {"interval_us", "anchor"},
         "cron": set(cron_spec.KEYS)}


def _unevaluable(reason: str, kind: Any, version: Any, detail: str) -> UnevaluableGeneration:
    return UnevaluableGeneration(
        f"stored schedule spec cannot be evaluated: {detail}",
        reason=reason, kind=repr(kind)[:80], evaluator_version=repr(version)[:80],
    )


def spec_from_json(kind: str, data: dict[str, Any], evaluator_version: str) -> ScheduleSpec:
    """Strictly rebuild a spec from STORED data, which may have been tampered with.

    Anything but the exact shape ``spec_to_json`` writes for ``EVALUATOR_VERSION`` raises
    ``UnevaluableGeneration`` (DS114) with a short ``reason``: unknown evaluator version or kind,
    a non-dict, missing or extra keys, wrong types (``bool`` is not an int), non-positive or
    overflowing durations, and timestamps that are not canonical UTC ISO-8601 with six
    fractional digits. The runner quarantines such a schedule (docs/protocol/runner.md rules R1-R3).
    """
    def bad(reason: str, detail: str) -> UnevaluableGeneration:
        return _unevaluable(reason, kind, evaluator_version, detail)

    if not isinstance(kind, str) or kind not in _KEYS:
        raise bad("unknown_kind", "kind is not one of at, after, every, cron")
    expected = EVALUATOR_VERSIONS[kind]
    if not isinstance(evaluator_version, str) or evaluator_version != expected:
        raise bad("unknown_evaluator_version", f"evaluator version is not {expected}")
    if kind == "cron":
        return cron_spec.from_json(data, bad)
    if not isinstance(data, dict):
        raise bad("not_an_object", "spec data is not a JSON object")
    if set(data) != _KEYS[kind]:
        raise bad("wrong_keys", f"{kind} spec keys must be exactly {sorted(_KEYS[kind])}")

    def instant(key: str) -> datetime:
        value = data[key]
        if not isinstance(value, str) or not _CANONICAL_ISO.fullmatch(value):
            raise bad("bad_timestamp", f"{key} is not a canonical UTC timestamp")
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise bad("bad_timestamp", f"{key} is not a valid timestamp") from None

    def duration(key: str) -> timedelta:
        value = data[key]
        if type(value) is not int:
            raise bad("bad_duration", f"{key} is not an integer")
        if value <= 0:
            raise bad("non_positive_duration", f"{key} is not positive")
        try:
            return timedelta(microseconds=value)
        except OverflowError:
            raise bad("bad_duration", f"{key} is out of range") from None

    try:
        if kind == "at":
            return At(instant("at"))
        if kind == "after":
            return After(duration("delay_us"))
        anchor = None if data["anchor"] is None else instant("anchor")
        return Every(duration("interval_us"), anchor)
    except ScheduleError as exc:
        if isinstance(exc, UnevaluableGeneration):
            raise
        raise bad("invalid_spec", exc.message) from exc


# ---------------------------------------------------------------- instants
@dataclass(frozen=True)
class InstantRange:
    """``count`` nominal instants from ``first`` to ``last`` inclusive (both UTC).

    ``count_exact`` is False only for a cron window holding more than the cron evaluator's
    ``COUNT_LIMIT`` instants (then ``count`` is that limit: "at least"). ``local`` describes a
    cron window's first and last instant in local time (wall time, fold, shifted), else None.
    """

    first: datetime
    last: datetime
    count: int
    count_exact: bool = True
    local: dict[str, Any] | None = None


def _single_us(spec: At | After, accepted_us: int) -> int:
    if isinstance(spec, At):
        return to_us(spec.when)
    return accepted_us + spec.delay // _ONE_US


def _grid(spec: Every, accepted_us: int) -> tuple[int, int]:
    anchor = accepted_us if spec.anchor is None else to_us(spec.anchor)
    return anchor, spec.interval // _ONE_US


def _first_k_after(anchor: int, interval: int, t: int) -> int:
    """Smallest ``k >= 0`` with ``anchor + k·interval > t``."""
    return 0 if t < anchor else (t - anchor) // interval + 1


def _checked(spec: Any) -> ScheduleSpec:
    kind_of(spec)
    return spec


def _seconds_floor(micros: int) -> int:
    return micros // 1_000_000


def local_detail(occ: Occurrence, tz: str) -> dict[str, Any]:
    """The local wall time of a cron instant, for history details and the admin."""
    wall = datetime(1970, 1, 1) + timedelta(seconds=occ.wall)
    return {"tz": tz, "wall": wall.isoformat(), "fold": occ.fold, "shifted": occ.shifted}


def instants_in(
    spec: ScheduleSpec, accepted_at: datetime, cursor: datetime, cutoff: datetime
) -> InstantRange | None:
    """The nominal instants ``t`` with ``cursor < t <= cutoff`` (docs/protocol/schedules.md rule
    S1), or ``None``.

    The cursor is excluded and the cutoff included. O(1) for any number of instants.
    """
    spec = _checked(spec)
    accepted_us = _arg_us(accepted_at, "accepted_at")
    lo, hi = _arg_us(cursor, "cursor"), _arg_us(cutoff, "cutoff")
    if hi <= lo:
        return None
    if isinstance(spec, Cron):
        # Cron instants are whole seconds: (lo, hi] in µs holds the same seconds as
        # (floor(lo), floor(hi)] in seconds.
        found = spec.evaluator().window(_seconds_floor(lo), _seconds_floor(hi))
        if found is None:
            return None
        first, last, count, exact = found
        return InstantRange(
            first=from_us(first.utc * 1_000_000), last=from_us(last.utc * 1_000_000),
            count=count, count_exact=exact,
            local={"first": local_detail(first, spec.tz), "last": local_detail(last, spec.tz)})
    if isinstance(spec, At | After):
        t = _single_us(spec, accepted_us)
        if not lo < t <= hi:
            return None
        first_us, last_us, count = t, t, 1
    else:
        anchor, interval = _grid(spec, accepted_us)
        if hi < anchor:
            return None
        k0 = _first_k_after(anchor, interval, lo)
        k1 = (hi - anchor) // interval
        if k1 < k0:
            return None
        first_us, last_us, count = anchor + k0 * interval, anchor + k1 * interval, k1 - k0 + 1
    # Both ends are <= cutoff, a representable datetime, so the conversions cannot fail.
    return InstantRange(first=from_us(first_us), last=from_us(last_us), count=count)


def counted_to_the_end(spec: ScheduleSpec, found: InstantRange) -> InstantRange:
    """``found`` with its exact count: a count that is recorded (the instants a skip drops,
    ``missed``) may not stop at the cron evaluator's ``COUNT_LIMIT``. Only an inexact cron
    window is counted again (by whole local days, see ``Evaluator.count``)."""
    if found.count_exact:
        return found
    count = spec.evaluator().count(_seconds_floor(to_us(found.first)) - 1,
                                   _seconds_floor(to_us(found.last)))
    return InstantRange(first=found.first, last=found.last, count=count, count_exact=True,
                        local=found.local)


def next_instant_after(spec: ScheduleSpec, accepted_at: datetime, t: datetime) -> datetime | None:
    """The first nominal instant strictly after ``t``; ``None`` when the spec has no more.

    ``next_instant_after(spec, accepted_at, accepted_at)`` is the first due time of a new
    generation, because the cursor starts at ``accepted_at``.
    """
    spec = _checked(spec)
    accepted_us = _arg_us(accepted_at, "accepted_at")
    after = _arg_us(t, "t")
    if isinstance(spec, Cron):
        occ = spec.evaluator().next_after(_seconds_floor(after))
        return None if occ is None else from_us(occ.utc * 1_000_000)
    if isinstance(spec, At | After):
        candidate = _single_us(spec, accepted_us)
        return from_us(candidate) if candidate > after else None
    anchor, interval = _grid(spec, accepted_us)
    return from_us(anchor + _first_k_after(anchor, interval, after) * interval)
