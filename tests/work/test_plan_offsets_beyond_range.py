"""docs/work.md "Inspection": ``work.get`` / ``work.list`` show every accepted Work, and one row
never makes a whole page fail. A plan may be accepted whose later slots ``A + O[i]`` fall beyond
the supported UTC range (offsets are durations; the acceptance instant is only known at
insertion). Such a slot is never reached -- the admission cutoff is capped at the end of the
range, and the runtime closes the plan instead of scheduling it -- so the projection has no next
eligibility for it: ``next_eligibility_at`` is None, not a DS215 out of ``get`` and ``list``."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.evaluation.policy import next_eligibility
from tests.conftest import T0
from tests.work.conftest import run_pass

pytestmark = pytest.mark.django_db

FAR = timedelta(days=999_999_999)  # the largest timedelta: T0 + FAR is past year 9999
RETRY = work.RetryPolicy(maximum_attempts=2, maximum_elapsed=FAR)
PLAN = work.AttemptPlan("attempt-plan-v1", (timedelta(0), FAR - timedelta(days=1)), FAR)
POLICY = work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN)


@pytest.fixture
def failed_once(clock, define):
    """The Work after its first attempt failed: slot 1 lies beyond the supported range."""
    d = define("t.far_plan", policy=POLICY)

    @d.executor
    def fail(ctx, payload):
        raise RuntimeError("provider down")

    accepted = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={})
    assert run_pass().admitted == 1
    return accepted.work_id


def test_far_slot__get_shows_the_work_without_an_eligibility(failed_once):
    info = work.get("tenant-a", failed_once)
    assert info.attempt == 1
    assert info.execution.next_eligibility_at is None
    assert info.execution.current_slot == 0


def test_far_slot__list_shows_the_page(failed_once, define):
    other = define("t.near").enqueue(scope="tenant-a", command="c2", idempotency_key="k2",
                                     payload={})
    assert [i.work_id for i in work.list("tenant-a")] == [failed_once, other.work_id]


def test_far_slot__the_runtime_never_schedules_it(failed_once):
    assert work.get("tenant-a", failed_once).state in ("expired", "failed")


def test_next_eligibility__a_slot_in_range_is_still_given():
    assert next_eligibility(T0, POLICY, 0) == T0
    assert next_eligibility(T0, POLICY, 1) is None  # beyond the range: never eligible
