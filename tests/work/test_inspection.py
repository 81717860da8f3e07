"""Issue 3 item 6 / docs/protocol/work.md "Authorized Work List and Get": frozen projections with
the execution snapshot, one Work query per call whatever the page size, legacy execution None."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from durable_schedule import work
from durable_schedule.errors import InvalidArgument, WorkNotFound
from durable_schedule.work.enqueue import WorkRequest
from tests.conftest import T0
from tests.work.conftest import MIN

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=5, maximum_elapsed=timedelta(hours=4),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", tuple(m * MIN for m in (0, 5, 20, 60, 180)),
                        240 * MIN)


def accept(key: str, scope: str = "tenant-a", **changes) -> uuid.UUID:
    fields = dict(command_id="c", idempotency_key=key, work_name="t.inspect", work_version="v1",
                  payload={"k": key}, provider_safety="idempotent")
    return work.enqueue(scope, WorkRequest(**{**fields, **changes})).work_id


def test_get__projects_the_stored_facts_and_the_execution_snapshot(clock):
    work_id = accept("a", policy=work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN),
                     deadline=T0 + 200 * MIN)
    info = work.get("tenant-a", work_id)
    assert dataclasses.is_dataclass(info) and info.__dataclass_params__.frozen
    assert (info.scope, info.state, info.attempt, info.accepted_at, info.due_at) == (
        "tenant-a", "pending", 0, T0, T0)
    assert info.payload == {"k": "a"} and info.deadline == T0 + 200 * MIN
    snapshot = info.execution
    assert snapshot.policy == work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN)
    assert (snapshot.admission_cutoff, snapshot.cutoff_reason) == (T0 + 200 * MIN, "deadline")
    assert (snapshot.next_eligibility_at, snapshot.current_slot) == (T0, None)
    assert snapshot.admission_closed_at is None and snapshot.deadline_reached_at is None


def test_get__legacy_work_projects_no_execution_snapshot(clock):
    assert work.get("tenant-a", accept("legacy")).execution is None


def test_get__deadline_only_work_has_a_snapshot_without_slots(clock):
    info = work.get("tenant-a", accept("d", deadline=T0 + 60 * MIN))
    assert info.execution.next_eligibility_at is None and info.execution.current_slot is None
    assert info.execution.admission_cutoff == T0 + 60 * MIN


def test_get__unknown_work_is_not_found(clock):
    with pytest.raises(WorkNotFound):
        work.get("tenant-a", uuid.uuid4())


def test_list__pages_in_acceptance_order_and_filters_by_state(clock):
    ids = [accept(f"k{i}") for i in range(5)]
    first = work.list("tenant-a", page_size=2)
    assert [i.work_id for i in first] == ids[:2]
    second = work.list("tenant-a", page_size=2, after=first[-1].work_id)
    assert [i.work_id for i in second] == ids[2:4]
    assert [i.work_id for i in work.list("tenant-a", after=ids[-1])] == []
    work.cancel("tenant-a", ids[1], actor="ops")
    assert [i.work_id for i in work.list("tenant-a", state="canceled")] == [ids[1]]
    assert len(work.list("tenant-a", state="pending")) == 4


@pytest.mark.parametrize("kwargs", [{"state": "done"}, {"page_size": 0},
                                    {"page_size": 501}, {"after": "not-a-uuid"}])
def test_list__bad_arguments_are_refused(clock, kwargs):
    with pytest.raises(InvalidArgument):
        work.list("tenant-a", **kwargs)


def _statements(fn) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        fn()
    sql = [q["sql"] for q in captured.captured_queries]
    return len(sql), sum("durable_work" in s for s in sql)


def test_list__one_work_query_whatever_the_page_size(clock):
    for i in range(100):
        accept(f"k{i}", policy=work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN))
    small = _statements(lambda: work.list("tenant-a", page_size=1))
    large = _statements(lambda: work.list("tenant-a", page_size=100))
    assert small == large and small[1] == 1
    assert len(work.list("tenant-a", page_size=100)) == 100


def test_get__one_work_query(clock):
    work_id = accept("a")
    assert _statements(lambda: work.get("tenant-a", work_id))[1] == 1
