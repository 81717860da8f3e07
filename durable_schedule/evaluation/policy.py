"""Work execution policies: retry policy, attempt plans, deadlines and their timing arithmetic.

Implements docs/protocol/work.md ("Durable Work execution policies v1", section "Validation and
timing rules") as pure functions: no database, no clock. Every instant is passed in by the caller
(the database is the clock, docs/protocol/storage.md), every instant is an aware datetime normalized
to UTC, and every duration keeps PostgreSQL's microsecond precision (a float or a finer value is
rejected, never rounded). For acceptance instant A, plan offset O[i], circuit C, maximum elapsed M
and optional exclusive deadline D::

    planned slot i eligibility = A + O[i]
    planned admission cutoff   = min(A + C, A + M, D when present)
    deadline-only cutoff       = min(A + M, D)          (legacy: A + M)
    admit a new attempt        = due_at <= now < admission cutoff

Reason vocabulary (``execution_admission_closed_reason``): ``deadline`` (D defines the
cutoff), ``circuit_open`` (A + C does), ``max_elapsed`` (A + M does), ``plan_exhausted`` (a
planned Work failed in its final slot), ``attempts_exhausted`` (a legacy / deadline-only Work
failed its last allowed attempt). Equal cutoff bounds are named in the order deadline,
circuit_open, max_elapsed: the most specific promise wins a tie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from durable_schedule.errors import (
    DurableError,
    InvalidArgument,
    InvalidAttemptPlan,
    InvalidExecutionDeadline,
    InvalidLease,
    InvalidRetryPolicy,
    WorkArithmeticOutOfRange,
    WorkPrecisionError,
)

BACKOFF_ALGORITHMS = ("exponential-v1", "fixed-v1")
ATTEMPT_PLAN_VERSIONS = ("attempt-plan-v1",)
MAX_PLAN_OFFSETS = 256
MAX_LEASE_DURATION = timedelta(minutes=10)
# Python's datetime range is narrower than PostgreSQL's timestamptz range, so it is the bound.
MIN_INSTANT = datetime.min.replace(tzinfo=UTC)
MAX_INSTANT = datetime.max.replace(tzinfo=UTC)

REASON_DEADLINE = "deadline"
REASON_CIRCUIT_OPEN = "circuit_open"
REASON_MAX_ELAPSED = "max_elapsed"
REASON_PLAN_EXHAUSTED = "plan_exhausted"
REASON_ATTEMPTS_EXHAUSTED = "attempts_exhausted"
CUTOFF_REASONS = (REASON_DEADLINE, REASON_CIRCUIT_OPEN, REASON_MAX_ELAPSED)
CLOSURE_REASONS = (*CUTOFF_REASONS, REASON_PLAN_EXHAUSTED, REASON_ATTEMPTS_EXHAUSTED)

_ONE_MICROSECOND = timedelta(microseconds=1)
_Err = type[DurableError]


def as_duration(value: object, field: str, error: _Err = InvalidArgument) -> timedelta:
    """``value`` (timedelta or int microseconds) as a plain timedelta; a wrong type raises
    ``error``; floats and sub-microsecond values raise DS206 (docs/protocol/work.md: "rejected, not
    rounded").
    """
    if value.__class__ is timedelta:  # already what the checks below would return: a copy
        return value
    if isinstance(value, float):
        raise WorkPrecisionError(f"{field} must be a timedelta or int microseconds, not a float")
    if isinstance(value, bool) or not isinstance(value, int | timedelta):
        raise error(f"{field} must be a timedelta or int microseconds", value=value)
    if isinstance(value, int):
        try:
            return timedelta(microseconds=value)
        except OverflowError:
            raise WorkArithmeticOutOfRange(f"{field} is outside the timedelta range") from None
    if getattr(value, "nanoseconds", 0):
        raise WorkPrecisionError(f"{field} has sub-microsecond precision", value=value)
    return timedelta(days=value.days, seconds=value.seconds, microseconds=value.microseconds)


def as_instant(value: object, field: str, error: _Err = WorkPrecisionError) -> datetime:
    """Return ``value`` as an aware UTC datetime; naive or non-datetime values raise ``error``."""
    if value.__class__ is datetime and value.tzinfo is UTC:
        # A plain UTC datetime (what the store's rows hold) is already the answer: the steps
        # below would return an equal copy (astimezone returns it unchanged, combine copies
        # date, time and fold).
        return value
    if not isinstance(value, datetime):
        raise error(f"{field} must be an aware datetime", value=value)
    if value.tzinfo is None or value.utcoffset() is None:
        raise error(f"{field} must be an aware datetime (tzinfo set), got a naive one")
    if getattr(value, "nanosecond", 0):
        raise WorkPrecisionError(f"{field} has sub-microsecond precision", value=value)
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise WorkArithmeticOutOfRange(f"{field} is outside the supported UTC range") from None
    return datetime.combine(utc.date(), utc.time(), UTC)  # a plain datetime, never a subclass


def checked_add(instant: datetime, duration: timedelta, field: str = "instant") -> datetime:
    """``instant + duration`` (duration >= 0); leaving the range raises DS215."""
    if duration > MAX_INSTANT - instant:
        raise WorkArithmeticOutOfRange(
            f"{field} leaves the supported UTC range", instant=instant, duration=duration
        )
    return instant + duration


def bounded_add(instant: datetime, duration: timedelta, bound: datetime) -> datetime:
    """``min(instant + duration, bound)`` for a non-negative duration, without overflow.

    docs/protocol/work.md: "Lease and renewal additions compare the remaining time before adding, so
    a large duration can be safely bounded by the absolute deadline or the supported UTC range."
    """
    if duration >= bound - instant:
        return bound
    return instant + duration


def _positive_int(value: object, field: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(f"{field} must be an int >= {minimum}", value=value)
    return value


def _strict_keys(d: object, keys: Sequence[str], what: str, error: _Err) -> None:
    if not isinstance(d, Mapping) or set(d) != set(keys):
        raise error(f"{what} JSON must be an object with exactly the keys {sorted(keys)}", got=d)


_RETRY_DURATIONS = ("maximum_elapsed", "initial_retry_delay", "maximum_retry_delay")
_RETRY_DURATIONS += ("lease_duration", "renewal_cadence", "maximum_lease_lifetime")


@dataclass(frozen=True)
class RetryPolicy:
    """Immutable retry and lease settings of a Work request (docs/protocol/work.md, "Choose the
    policy").

    Durations accept a timedelta or int microseconds. For planned Work the delay fields stay
    part of the snapshot but add no backoff or jitter to planned slots (docs/protocol/work.md).
    """

    maximum_attempts: int = 5
    maximum_elapsed: timedelta = timedelta(hours=24)
    initial_retry_delay: timedelta = timedelta(seconds=10)
    maximum_retry_delay: timedelta = timedelta(hours=1)
    lease_duration: timedelta = timedelta(minutes=1)
    renewal_cadence: timedelta = timedelta(seconds=15)
    maximum_lease_lifetime: timedelta = timedelta(minutes=10)
    backoff_algorithm: str = "exponential-v1"

    def __post_init__(self) -> None:
        for name in _RETRY_DURATIONS:
            value = as_duration(getattr(self, name), name, InvalidRetryPolicy)
            object.__setattr__(self, name, value)
        attempts = self.maximum_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise InvalidRetryPolicy("maximum_attempts must be an int >= 1", value=attempts)
        # Plain int and str values: a subclass compares and hashes equal but may print or encode
        # otherwise, and the fingerprint's shared parts are cached by equality.
        object.__setattr__(self, "maximum_attempts", int.__index__(attempts))
        for name in _RETRY_DURATIONS:
            if getattr(self, name) <= timedelta(0):
                raise InvalidRetryPolicy(f"{name} must be greater than zero")
        if self.initial_retry_delay > self.maximum_retry_delay:
            raise InvalidRetryPolicy("initial_retry_delay must not exceed maximum_retry_delay")
        if self.renewal_cadence >= self.lease_duration:
            raise InvalidRetryPolicy("renewal_cadence must be shorter than lease_duration")
        if self.lease_duration > self.maximum_lease_lifetime:
            raise InvalidRetryPolicy("lease_duration must not exceed maximum_lease_lifetime")
        if self.lease_duration > MAX_LEASE_DURATION:
            raise InvalidRetryPolicy("lease_duration must be at most 10 minutes")
        if (not isinstance(self.backoff_algorithm, str)
                or self.backoff_algorithm not in BACKOFF_ALGORITHMS):
            raise InvalidRetryPolicy(f"backoff_algorithm must be one of {BACKOFF_ALGORITHMS}")
        object.__setattr__(self, "backoff_algorithm", str.__str__(self.backoff_algorithm))

    def retry_delay(self, failed_attempt: int) -> timedelta:
        """Delay after the one-based ``failed_attempt`` (deterministic, no jitter).

        ``exponential-v1``: initial * 2**(n-1) capped at maximum_retry_delay; ``fixed-v1``:
        initial. Integer microsecond arithmetic keeps huge attempt numbers from overflowing.
        """
        n = _positive_int(failed_attempt, "failed_attempt", 1)
        if self.backoff_algorithm == "fixed-v1":
            return self.initial_retry_delay
        initial = self.initial_retry_delay // _ONE_MICROSECOND
        maximum = self.maximum_retry_delay // _ONE_MICROSECOND
        if n - 1 > maximum.bit_length():
            return self.maximum_retry_delay
        return timedelta(microseconds=min(initial << (n - 1), maximum))

    def to_json(self) -> dict[str, Any]:
        """JSON snapshot; durations as int microseconds under ``<field>_us`` keys."""
        out: dict[str, Any] = {"maximum_attempts": self.maximum_attempts}
        for name in _RETRY_DURATIONS:
            out[f"{name}_us"] = getattr(self, name) // _ONE_MICROSECOND
        out["backoff_algorithm"] = self.backoff_algorithm
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RetryPolicy:
        """Inverse of :meth:`to_json`; missing or unknown keys raise InvalidRetryPolicy."""
        keys = ["maximum_attempts", *(f"{n}_us" for n in _RETRY_DURATIONS), "backoff_algorithm"]
        _strict_keys(d, keys, "RetryPolicy", InvalidRetryPolicy)
        durations = {name: d[f"{name}_us"] for name in _RETRY_DURATIONS}
        return cls(d["maximum_attempts"], backoff_algorithm=d["backoff_algorithm"], **durations)


@dataclass(frozen=True)
class AttemptPlan:
    """Fixed acceptance-relative attempt slots (docs/protocol/work.md, "Validation and timing
    rules").

    Offsets are zero-based slots; execution attempts stay one-based (attempt n uses slot n-1).
    The circuit is an exclusive duration measured from acceptance.
    """

    version: str
    offsets: tuple[timedelta, ...]
    circuit: timedelta

    def __post_init__(self) -> None:
        if not isinstance(self.version, str) or not self.version:
            raise InvalidAttemptPlan("version must be a non-empty string", value=self.version)
        if self.version not in ATTEMPT_PLAN_VERSIONS:
            raise InvalidAttemptPlan(f"version must be one of {ATTEMPT_PLAN_VERSIONS}")
        object.__setattr__(self, "version", str.__str__(self.version))  # plain str (RetryPolicy)
        if isinstance(self.offsets, str | bytes) or not isinstance(self.offsets, Sequence):
            raise InvalidAttemptPlan("offsets must be a sequence of durations")
        offsets = tuple(
            as_duration(o, f"offsets[{i}]", InvalidAttemptPlan) for i, o in enumerate(self.offsets)
        )
        circuit = as_duration(self.circuit, "circuit", InvalidAttemptPlan)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "circuit", circuit)
        if not offsets:
            raise InvalidAttemptPlan("an attempt plan needs at least one offset")
        if len(offsets) > MAX_PLAN_OFFSETS:
            raise InvalidAttemptPlan(f"an attempt plan accepts at most {MAX_PLAN_OFFSETS} offsets")
        if offsets[0] != timedelta(0):
            raise InvalidAttemptPlan("the first offset must be zero", first=offsets[0])
        for i in range(1, len(offsets)):
            if offsets[i] <= offsets[i - 1]:
                raise InvalidAttemptPlan("offsets must be strictly increasing", index=i)
        if circuit <= timedelta(0):
            raise InvalidAttemptPlan("circuit must be greater than zero", circuit=circuit)
        if circuit <= offsets[-1]:
            raise InvalidAttemptPlan("circuit must be strictly greater than the last offset")

    def to_json(self) -> dict[str, Any]:
        """JSON snapshot; offsets and circuit as int microseconds."""
        offsets_us = [o // _ONE_MICROSECOND for o in self.offsets]
        circuit_us = self.circuit // _ONE_MICROSECOND
        return {"version": self.version, "offsets_us": offsets_us, "circuit_us": circuit_us}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AttemptPlan:
        """Inverse of :meth:`to_json`; missing or unknown keys raise InvalidAttemptPlan."""
        _strict_keys(d, ["version", "offsets_us", "circuit_us"], "AttemptPlan", InvalidAttemptPlan)
        if not isinstance(d["offsets_us"], list):
            raise InvalidAttemptPlan("offsets_us must be a list of int microseconds")
        return cls(d["version"], tuple(d["offsets_us"]), d["circuit_us"])


@dataclass(frozen=True)
class ExecutionDeadline:
    """Absolute, exclusive execution deadline D (docs/protocol/work.md): admission closes at or
    after D."""

    at: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "at", as_instant(self.at, "deadline", InvalidExecutionDeadline))


_Deadline = datetime | ExecutionDeadline | None


def deadline_instant(deadline: _Deadline) -> datetime | None:
    """The deadline as an aware UTC instant, or None; naive raises InvalidExecutionDeadline."""
    if deadline is None:
        return None
    if isinstance(deadline, ExecutionDeadline):
        return deadline.at
    return as_instant(deadline, "deadline", InvalidExecutionDeadline)


@dataclass(frozen=True)
class ExecutionPolicy:
    """A retry policy plus an optional attempt plan; immutable request facts
    (docs/protocol/work.md)."""

    retry: RetryPolicy
    plan: AttemptPlan | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.retry, RetryPolicy):
            raise InvalidRetryPolicy("retry must be a RetryPolicy", got=type(self.retry).__name__)
        if self.plan is None:
            return
        if not isinstance(self.plan, AttemptPlan):
            raise InvalidAttemptPlan("plan must be an AttemptPlan", got=type(self.plan).__name__)
        if self.retry.maximum_attempts != len(self.plan.offsets):
            raise InvalidAttemptPlan("retry.maximum_attempts must equal the number of offsets")
        if self.retry.maximum_elapsed < self.plan.circuit:
            raise InvalidAttemptPlan("retry.maximum_elapsed must be at least the plan circuit")

    @classmethod
    def from_retry_policy(cls, retry: RetryPolicy) -> ExecutionPolicy:
        """Legacy completion-relative backoff (also used for deadline-only Work)."""
        return cls(retry=retry)

    @classmethod
    def for_attempt_plan(cls, retry: RetryPolicy, plan: AttemptPlan) -> ExecutionPolicy:
        """Fixed-slot policy; requires maximum_attempts == len(offsets), M >= circuit."""
        if plan is None:
            raise InvalidAttemptPlan("for_attempt_plan needs a plan")
        return cls(retry=retry, plan=plan)

    def to_json(self) -> dict[str, Any]:
        """JSON snapshot ``{"retry": {...}, "plan": {...} | None}``."""
        plan = None if self.plan is None else self.plan.to_json()
        return {"retry": self.retry.to_json(), "plan": plan}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExecutionPolicy:
        """Inverse of :meth:`to_json`."""
        _strict_keys(d, ["retry", "plan"], "ExecutionPolicy", InvalidRetryPolicy)
        plan = None if d["plan"] is None else AttemptPlan.from_json(d["plan"])
        return cls(retry=RetryPolicy.from_json(d["retry"]), plan=plan)


def _check_policy(policy: object) -> ExecutionPolicy:
    if not isinstance(policy, ExecutionPolicy):
        raise InvalidArgument("policy must be an ExecutionPolicy", got=type(policy).__name__)
    return policy


def _cutoff(
    accepted_at: datetime, policy: ExecutionPolicy, deadline: _Deadline
) -> tuple[datetime, str]:
    """The admission cutoff and the bound that defines it (ties: deadline, circuit, elapsed)."""
    a = as_instant(accepted_at, "accepted_at")
    policy = _check_policy(policy)
    bounds: list[tuple[datetime, str]] = []
    d = deadline_instant(deadline)
    if d is not None:
        bounds.append((d, REASON_DEADLINE))
    if policy.plan is not None:
        bounds.append((bounded_add(a, policy.plan.circuit, MAX_INSTANT), REASON_CIRCUIT_OPEN))
    bounds.append((bounded_add(a, policy.retry.maximum_elapsed, MAX_INSTANT), REASON_MAX_ELAPSED))
    # min() keeps the first of equal elements, which is the tie order above.
    return min(bounds, key=lambda bound: bound[0])


def slot_eligibility(accepted_at: datetime, plan: AttemptPlan, slot_index: int) -> datetime:
    """Planned slot i eligibility = A + O[i] (checked: out of range raises DS215)."""
    a = as_instant(accepted_at, "accepted_at")
    if not isinstance(plan, AttemptPlan):
        raise InvalidArgument("plan must be an AttemptPlan")
    i = _positive_int(slot_index, "slot_index", 0)
    if i >= len(plan.offsets):
        raise InvalidArgument("slot_index is beyond the plan", slot_index=i)
    return checked_add(a, plan.offsets[i], f"slot {i} eligibility")


def admission_cutoff(
    accepted_at: datetime, policy: ExecutionPolicy, deadline: _Deadline
) -> datetime:
    """Exclusive admission cutoff: planned min(A+C, A+M, D); otherwise min(A+M, D).

    Sums that would leave the supported range are capped at MAX_INSTANT (docs/protocol/work.md:
    reaching the cutoff closes admission instead of overflowing).
    """
    return _cutoff(accepted_at, policy, deadline)[0]


def closure_reason(accepted_at: datetime, policy: ExecutionPolicy, deadline: _Deadline) -> str:
    """Which bound defines :func:`admission_cutoff`: deadline, circuit_open or max_elapsed."""
    return _cutoff(accepted_at, policy, deadline)[1]


def may_admit(due_at: datetime, now: datetime, cutoff: datetime) -> bool:
    """docs/protocol/work.md: admit a new attempt when due_at <= now < admission cutoff."""
    return as_instant(due_at, "due_at") <= as_instant(now, "now") < as_instant(cutoff, "cutoff")


def next_retry_due(
    *,
    policy: ExecutionPolicy,
    accepted_at: datetime,
    failed_attempt: int,
    now: datetime,
    deadline: _Deadline = None,
) -> tuple[datetime | None, str | None]:
    """After the one-based ``failed_attempt`` failed at ``now``: ``(due_at, None)`` or
    ``(None, reason)``.

    Planned: the next slot is index ``failed_attempt``, due A + O[failed_attempt]; it may
    already be overdue, so fast failures consume overdue slots in a burst (docs/protocol/work.md).
    Legacy / deadline-only: now + retry_delay(failed_attempt). Closure reasons, checked in this
    order: a cutoff already passed at ``now`` (it closed admission before this failure), then
    ``plan_exhausted`` / ``attempts_exhausted``, then a due time at or after the cutoff.
    """
    policy = _check_policy(policy)
    n = _positive_int(failed_attempt, "failed_attempt", 1)
    current = as_instant(now, "now")
    a = as_instant(accepted_at, "accepted_at")
    cutoff, reason = _cutoff(a, policy, deadline)
    if current >= cutoff:
        return None, reason
    if policy.plan is not None:
        if n >= len(policy.plan.offsets):
            return None, REASON_PLAN_EXHAUSTED
        due = bounded_add(a, policy.plan.offsets[n], cutoff)
    else:
        if n >= policy.retry.maximum_attempts:
            return None, REASON_ATTEMPTS_EXHAUSTED
        due = bounded_add(current, policy.retry.retry_delay(n), cutoff)
    if due >= cutoff:
        return None, reason
    return due, None


def lease_expiry(
    now: datetime,
    lease_duration: timedelta | int,
    attempt_started_at: datetime,
    maximum_lease_lifetime: timedelta | int,
    deadline: _Deadline,
) -> datetime:
    """now + lease, capped by attempt_started_at + maximum lifetime and by the deadline.

    Remaining time is compared before adding (docs/protocol/work.md), so nothing overflows. A result
    at or before ``now`` means the attempt has no lease time left (renewal must be refused).
    """
    current = as_instant(now, "now")
    started = as_instant(attempt_started_at, "attempt_started_at")
    lease = as_duration(lease_duration, "lease_duration", InvalidLease)
    lifetime = as_duration(maximum_lease_lifetime, "maximum_lease_lifetime", InvalidLease)
    if lease <= timedelta(0) or lease > MAX_LEASE_DURATION:
        raise InvalidLease("lease_duration must be > 0 and <= 10 minutes", lease=lease)
    if lifetime <= timedelta(0):
        raise InvalidLease("maximum_lease_lifetime must be greater than zero")
    cap = bounded_add(started, lifetime, MAX_INSTANT)
    d = deadline_instant(deadline)
    if d is not None:
        cap = min(cap, d)
    return bounded_add(current, lease, cap)


def next_eligibility(
    accepted_at: datetime, policy: ExecutionPolicy, attempt_count: int
) -> datetime | None:
    """Next unconsumed planned slot after ``attempt_count`` claimed attempts
    (docs/protocol/work.md).

    None after the final slot is claimed, and always None for legacy / deadline-only Work. None
    too for a slot beyond the supported UTC range: the cutoff is capped at that range's end, so
    such a slot is never eligible (the runtime closes the plan instead of scheduling it).
    """
    policy = _check_policy(policy)
    count = _positive_int(attempt_count, "attempt_count", 0)
    if policy.plan is None or count >= len(policy.plan.offsets):
        return None
    a = as_instant(accepted_at, "accepted_at")
    if policy.plan.offsets[count] > MAX_INSTANT - a:
        return None
    return slot_eligibility(a, policy.plan, count)
