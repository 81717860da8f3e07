"""Execution-policy arithmetic, read like docs/protocol/work.md "Validation and timing rules"
(pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from durable_schedule.errors import (
    InvalidArgument,
    InvalidAttemptPlan,
    InvalidExecutionDeadline,
    InvalidLease,
    InvalidRetryPolicy,
    WorkArithmeticOutOfRange,
    WorkPrecisionError,
)
from durable_schedule.evaluation.policy import (
    MAX_INSTANT,
    AttemptPlan,
    ExecutionDeadline,
    ExecutionPolicy,
    RetryPolicy,
    admission_cutoff,
    as_duration,
    as_instant,
    checked_add,
    closure_reason,
    lease_expiry,
    may_admit,
    next_eligibility,
    next_retry_due,
    slot_eligibility,
)

MIN = timedelta(minutes=1)
A = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SPEC_OFFSETS = (0, 5, 20, 60, 180)


class NanoTimedelta(timedelta):
    """A timedelta carrying sub-microsecond precision, like pandas.Timedelta."""

    nanoseconds = 500


def spec_plan() -> AttemptPlan:
    return AttemptPlan("attempt-plan-v1", tuple(o * MIN for o in SPEC_OFFSETS), 240 * MIN)


def spec_retry(**overrides: object) -> RetryPolicy:
    fields: dict[str, object] = dict(maximum_attempts=5, maximum_elapsed=240 * MIN)
    fields.update(overrides)
    return RetryPolicy(**fields)  # type: ignore[arg-type]


def spec_policy(**overrides: object) -> ExecutionPolicy:
    return ExecutionPolicy.for_attempt_plan(spec_retry(**overrides), spec_plan())


LEGACY = ExecutionPolicy.from_retry_policy(
    RetryPolicy(maximum_attempts=3, maximum_elapsed=60 * MIN)
)


# ------------------------------------------------------------------ RetryPolicy validation
def test_retry_policy__defaults_are_valid_and_accept_int_microseconds() -> None:
    policy = RetryPolicy(initial_retry_delay=2_000_000)
    assert policy.initial_retry_delay == timedelta(seconds=2)
    assert policy.maximum_attempts == 5 and policy.lease_duration == MIN


def test_retry_policy__rejects_maximum_attempts_below_one() -> None:
    with pytest.raises(InvalidRetryPolicy, match="maximum_attempts"):
        RetryPolicy(maximum_attempts=0)


@pytest.mark.parametrize(
    "field",
    [
        "maximum_elapsed",
        "initial_retry_delay",
        "maximum_retry_delay",
        "lease_duration",
        "renewal_cadence",
        "maximum_lease_lifetime",
    ],
)
def test_retry_policy__rejects_non_positive_duration(field: str) -> None:
    with pytest.raises(InvalidRetryPolicy, match=f"{field} must be greater than zero"):
        RetryPolicy(**{field: timedelta(0)})  # type: ignore[arg-type]


def test_retry_policy__rejects_initial_delay_above_maximum_delay() -> None:
    with pytest.raises(InvalidRetryPolicy, match="initial_retry_delay must not exceed"):
        RetryPolicy(initial_retry_delay=2 * MIN, maximum_retry_delay=MIN)


def test_retry_policy__rejects_renewal_cadence_not_shorter_than_lease() -> None:
    with pytest.raises(InvalidRetryPolicy, match="renewal_cadence must be shorter"):
        RetryPolicy(renewal_cadence=MIN, lease_duration=MIN)


def test_retry_policy__rejects_lease_longer_than_maximum_lifetime() -> None:
    with pytest.raises(InvalidRetryPolicy, match="must not exceed maximum_lease_lifetime"):
        RetryPolicy(lease_duration=5 * MIN, maximum_lease_lifetime=4 * MIN)


def test_retry_policy__rejects_lease_longer_than_ten_minutes() -> None:
    with pytest.raises(InvalidRetryPolicy, match="at most 10 minutes"):
        RetryPolicy(lease_duration=11 * MIN, maximum_lease_lifetime=20 * MIN)


def test_retry_policy__rejects_unknown_backoff_algorithm() -> None:
    with pytest.raises(InvalidRetryPolicy, match="backoff_algorithm"):
        RetryPolicy(backoff_algorithm="exponential-v2")


def test_retry_policy__rejects_non_duration_type() -> None:
    with pytest.raises(InvalidRetryPolicy, match="maximum_elapsed"):
        RetryPolicy(maximum_elapsed="1h")  # type: ignore[arg-type]


def test_retry_policy__rejects_float_duration_instead_of_rounding() -> None:
    with pytest.raises(WorkPrecisionError):
        RetryPolicy(initial_retry_delay=1.5)  # type: ignore[arg-type]


def test_retry_policy__rejects_sub_microsecond_duration() -> None:
    with pytest.raises(WorkPrecisionError, match="sub-microsecond"):
        RetryPolicy(initial_retry_delay=NanoTimedelta(seconds=1))


def test_retry_policy__json_round_trip_uses_int_microseconds() -> None:
    policy = spec_retry(backoff_algorithm="fixed-v1")
    data = policy.to_json()
    assert data["maximum_elapsed_us"] == 240 * 60 * 1_000_000
    assert RetryPolicy.from_json(data) == policy


def test_retry_policy__from_json_rejects_unknown_and_missing_keys() -> None:
    data = RetryPolicy().to_json()
    with pytest.raises(InvalidRetryPolicy):
        RetryPolicy.from_json({**data, "jitter": 1})
    del data["lease_duration_us"]
    with pytest.raises(InvalidRetryPolicy):
        RetryPolicy.from_json(data)


def test_retry_delay__exponential_doubles_and_caps_without_jitter() -> None:
    policy = RetryPolicy(initial_retry_delay=timedelta(seconds=10), maximum_retry_delay=MIN)
    delays = [policy.retry_delay(n) for n in (1, 2, 3, 4, 10**6)]
    assert delays == [timedelta(seconds=s) for s in (10, 20, 40, 60, 60)]


def test_retry_delay__fixed_returns_initial_and_rejects_attempt_zero() -> None:
    policy = RetryPolicy(backoff_algorithm="fixed-v1", initial_retry_delay=timedelta(seconds=7))
    assert policy.retry_delay(9) == timedelta(seconds=7)
    with pytest.raises(InvalidArgument):
        policy.retry_delay(0)


# ------------------------------------------------------------------ AttemptPlan validation
def test_attempt_plan__accepts_spec_five_slot_plan_and_round_trips() -> None:
    plan = spec_plan()
    assert plan.offsets[-1] == 180 * MIN and plan.circuit == 240 * MIN
    assert AttemptPlan.from_json(plan.to_json()) == plan


def test_attempt_plan__rejects_empty_version() -> None:
    with pytest.raises(InvalidAttemptPlan, match="non-empty"):
        AttemptPlan("", (timedelta(0),), MIN)


def test_attempt_plan__rejects_unknown_version() -> None:
    with pytest.raises(InvalidAttemptPlan, match="version must be one of"):
        AttemptPlan("attempt-plan-v9", (timedelta(0),), MIN)


def test_attempt_plan__rejects_no_offsets() -> None:
    with pytest.raises(InvalidAttemptPlan, match="at least one offset"):
        AttemptPlan("attempt-plan-v1", (), MIN)


def test_attempt_plan__rejects_more_than_256_offsets() -> None:
    assert len(AttemptPlan("attempt-plan-v1", tuple(range(256)), 256).offsets) == 256
    with pytest.raises(InvalidAttemptPlan, match="at most 256"):
        AttemptPlan("attempt-plan-v1", tuple(range(257)), 257)


def test_attempt_plan__rejects_first_offset_not_zero() -> None:
    with pytest.raises(InvalidAttemptPlan, match="first offset must be zero"):
        AttemptPlan("attempt-plan-v1", (MIN, 2 * MIN), 3 * MIN)


@pytest.mark.parametrize("offsets", [(0, 5, 5), (0, 5, 3)])
def test_attempt_plan__rejects_offsets_not_strictly_increasing(offsets: tuple[int, ...]) -> None:
    with pytest.raises(InvalidAttemptPlan, match="strictly increasing"):
        AttemptPlan("attempt-plan-v1", tuple(o * MIN for o in offsets), 10 * MIN)


def test_attempt_plan__rejects_non_positive_circuit() -> None:
    with pytest.raises(InvalidAttemptPlan, match="circuit must be greater than zero"):
        AttemptPlan("attempt-plan-v1", (timedelta(0),), timedelta(0))


def test_attempt_plan__rejects_circuit_not_after_last_offset() -> None:
    with pytest.raises(InvalidAttemptPlan, match="greater than the last offset"):
        AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN), 5 * MIN)


def test_attempt_plan__rejects_float_offset() -> None:
    with pytest.raises(WorkPrecisionError):
        AttemptPlan("attempt-plan-v1", (0, 0.5), MIN)  # type: ignore[arg-type]


def test_attempt_plan__from_json_rejects_unknown_key() -> None:
    with pytest.raises(InvalidAttemptPlan):
        AttemptPlan.from_json({**spec_plan().to_json(), "jitter": True})


# ------------------------------------------------------------------ ExecutionPolicy validation
def test_execution_policy__rejects_attempts_not_equal_to_offsets() -> None:
    with pytest.raises(InvalidAttemptPlan, match="maximum_attempts must equal"):
        ExecutionPolicy.for_attempt_plan(spec_retry(maximum_attempts=6), spec_plan())


def test_execution_policy__rejects_max_elapsed_below_circuit() -> None:
    with pytest.raises(InvalidAttemptPlan, match="maximum_elapsed must be at least"):
        ExecutionPolicy.for_attempt_plan(spec_retry(maximum_elapsed=239 * MIN), spec_plan())


def test_execution_policy__json_round_trips_planned_and_legacy() -> None:
    assert ExecutionPolicy.from_json(spec_policy().to_json()) == spec_policy()
    assert LEGACY.plan is None and LEGACY.to_json()["plan"] is None
    assert ExecutionPolicy.from_json(LEGACY.to_json()) == LEGACY


def test_execution_deadline__rejects_naive_and_normalizes_to_utc() -> None:
    with pytest.raises(InvalidExecutionDeadline):
        ExecutionDeadline(datetime(2030, 1, 1))
    plus_two = datetime(2030, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    deadline = ExecutionDeadline(plus_two)
    assert deadline.at == A and deadline.at.tzinfo is UTC


# ------------------------------------------------------------------ the spec's five-slot plan
@pytest.mark.parametrize("slot, minutes", list(enumerate(SPEC_OFFSETS)))
def test_slot_eligibility__is_acceptance_plus_offset(slot: int, minutes: int) -> None:
    assert slot_eligibility(A, spec_plan(), slot) == A + minutes * MIN


def test_slot_eligibility__rejects_slot_beyond_plan() -> None:
    with pytest.raises(InvalidArgument):
        slot_eligibility(A, spec_plan(), 5)


def test_admission_cutoff__planned_is_circuit_when_deadline_later() -> None:
    deadline = A + 300 * MIN
    assert admission_cutoff(A, spec_policy(maximum_elapsed=250 * MIN), deadline) == A + 240 * MIN
    assert closure_reason(A, spec_policy(maximum_elapsed=250 * MIN), deadline) == "circuit_open"


def test_admission_cutoff__planned_is_deadline_when_deadline_earlier() -> None:
    assert admission_cutoff(A, spec_policy(), A + 100 * MIN) == A + 100 * MIN
    assert closure_reason(A, spec_policy(), ExecutionDeadline(A + 100 * MIN)) == "deadline"


def test_closure_reason__ties_prefer_deadline_then_circuit() -> None:
    # M == C in the spec example: the plan circuit names the cutoff.
    assert closure_reason(A, spec_policy(), None) == "circuit_open"
    assert closure_reason(A, spec_policy(), A + 240 * MIN) == "deadline"


def test_admission_cutoff__deadline_only_is_min_of_max_elapsed_and_deadline() -> None:
    assert admission_cutoff(A, LEGACY, A + 30 * MIN) == A + 30 * MIN
    assert closure_reason(A, LEGACY, A + 30 * MIN) == "deadline"
    assert admission_cutoff(A, LEGACY, A + 90 * MIN) == A + 60 * MIN
    assert closure_reason(A, LEGACY, A + 90 * MIN) == "max_elapsed"
    assert admission_cutoff(A, LEGACY, None) == A + 60 * MIN


def test_may_admit__due_inclusive_cutoff_exclusive() -> None:
    cutoff = A + 240 * MIN
    last_slot = A + 180 * MIN
    assert may_admit(last_slot, last_slot, cutoff)
    assert may_admit(last_slot, cutoff - timedelta(microseconds=1), cutoff)
    assert not may_admit(last_slot, cutoff, cutoff)
    assert not may_admit(last_slot, last_slot - timedelta(microseconds=1), cutoff)


def test_next_retry_due__planned_waits_for_the_next_slot() -> None:
    assert next_retry_due(policy=spec_policy(), accepted_at=A, failed_attempt=1, now=A + MIN) == (
        A + 5 * MIN,
        None,
    )


def test_next_retry_due__overdue_slots_are_consumed_in_a_burst() -> None:
    now = A + 100 * MIN  # downtime: slots 1..3 are all overdue
    cutoff = admission_cutoff(A, spec_policy(), None)
    dues = []
    for attempt in (1, 2, 3, 4):
        due, reason = next_retry_due(
            policy=spec_policy(), accepted_at=A, failed_attempt=attempt, now=now
        )
        assert reason is None
        dues.append(due)
    assert dues == [A + 5 * MIN, A + 20 * MIN, A + 60 * MIN, A + 180 * MIN]
    assert [may_admit(d, now, cutoff) for d in dues] == [True, True, True, False]


def test_next_retry_due__final_slot_failure_exhausts_the_plan() -> None:
    result = next_retry_due(
        policy=spec_policy(), accepted_at=A, failed_attempt=5, now=A + 181 * MIN
    )
    assert result == (None, "plan_exhausted")


def test_next_retry_due__no_slot_at_or_after_the_circuit() -> None:
    # An admitted attempt may outlive the circuit; its failure releases no retry.
    result = next_retry_due(
        policy=spec_policy(), accepted_at=A, failed_attempt=2, now=A + 240 * MIN
    )
    assert result == (None, "circuit_open")


def test_next_retry_due__slot_at_or_after_deadline_closes_admission() -> None:
    result = next_retry_due(
        policy=spec_policy(),
        accepted_at=A,
        failed_attempt=4,
        now=A + 61 * MIN,
        deadline=A + 180 * MIN,
    )
    assert result == (None, "deadline")


def test_next_retry_due__legacy_uses_backoff_from_now() -> None:
    now = A + 10 * MIN
    result = next_retry_due(policy=LEGACY, accepted_at=A, failed_attempt=2, now=now)
    assert result == (now + timedelta(seconds=20), None)


def test_next_retry_due__legacy_attempts_exhausted() -> None:
    result = next_retry_due(policy=LEGACY, accepted_at=A, failed_attempt=3, now=A + MIN)
    assert result == (None, "attempts_exhausted")


def test_next_retry_due__legacy_retry_reaching_max_elapsed_closes() -> None:
    now = A + 60 * MIN - timedelta(seconds=5)
    result = next_retry_due(policy=LEGACY, accepted_at=A, failed_attempt=1, now=now)
    assert result == (None, "max_elapsed")


def test_next_retry_due__deadline_only_retry_reaching_deadline_closes() -> None:
    result = next_retry_due(
        policy=LEGACY,
        accepted_at=A,
        failed_attempt=1,
        now=A + 5 * MIN,
        deadline=A + 5 * MIN + timedelta(seconds=10),
    )
    assert result == (None, "deadline")


def test_next_eligibility__walks_unconsumed_slots_then_none() -> None:
    got = [next_eligibility(A, spec_policy(), count) for count in range(6)]
    assert got == [A + o * MIN for o in SPEC_OFFSETS] + [None]
    assert next_eligibility(A, LEGACY, 0) is None


# ------------------------------------------------------------------ leases
def test_lease_expiry__is_now_plus_lease_when_uncapped() -> None:
    assert lease_expiry(A + MIN, MIN, A, 10 * MIN, None) == A + 2 * MIN


def test_lease_expiry__capped_by_maximum_lifetime() -> None:
    assert lease_expiry(A + 9 * MIN + timedelta(seconds=30), MIN, A, 10 * MIN, None) == A + 10 * MIN


def test_lease_expiry__capped_by_deadline_and_never_extends_past_it() -> None:
    deadline = ExecutionDeadline(A + 90 * MIN)
    assert lease_expiry(A + 89 * MIN, 5 * MIN, A + 88 * MIN, 10 * MIN, deadline) == A + 90 * MIN
    assert lease_expiry(A + 95 * MIN, 5 * MIN, A + 94 * MIN, 10 * MIN, deadline) == A + 90 * MIN


def test_lease_expiry__rejects_non_positive_or_over_ten_minute_lease() -> None:
    with pytest.raises(InvalidLease):
        lease_expiry(A, timedelta(0), A, 10 * MIN, None)
    with pytest.raises(InvalidLease):
        lease_expiry(A, 11 * MIN, A, 20 * MIN, None)


# ------------------------------------------------------------------ precision and range
def test_lease_expiry__huge_lifetime_near_range_end_is_bounded_not_overflowing() -> None:
    now = MAX_INSTANT - timedelta(seconds=30)
    assert lease_expiry(now, MIN, now, timedelta.max, None) == MAX_INSTANT


def test_slot_eligibility__out_of_range_raises() -> None:
    late = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    with pytest.raises(WorkArithmeticOutOfRange):
        slot_eligibility(late, spec_plan(), 4)  # 23:00 + 180 min
    with pytest.raises(WorkArithmeticOutOfRange):
        checked_add(late, timedelta(hours=2))


def test_admission_cutoff__caps_at_range_end_and_retry_closes_instead_of_overflowing() -> None:
    late = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    assert admission_cutoff(late, spec_policy(), None) == MAX_INSTANT
    result = next_retry_due(policy=spec_policy(), accepted_at=late, failed_attempt=4, now=late)
    assert result == (None, "circuit_open")


def test_precision__naive_instants_and_out_of_range_values_are_refused() -> None:
    with pytest.raises(WorkPrecisionError):
        admission_cutoff(datetime(2030, 1, 1), LEGACY, None)
    with pytest.raises(InvalidExecutionDeadline):
        admission_cutoff(A, LEGACY, datetime(2030, 1, 1))
    with pytest.raises(WorkArithmeticOutOfRange):
        as_instant(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))), "x")
    with pytest.raises(WorkArithmeticOutOfRange):
        as_duration(10**20, "x")


def test_precision__offset_instants_are_normalized_to_utc() -> None:
    plus_two = A.astimezone(timezone(timedelta(hours=2)))
    assert admission_cutoff(plus_two, spec_policy(), None) == A + 240 * MIN
    assert admission_cutoff(plus_two, spec_policy(), None).tzinfo is UTC
