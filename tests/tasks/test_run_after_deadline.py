"""A task whose ``run_after`` is at or after its absolute deadline is refused at enqueue
(DS218). The deadline is ``deadline_after`` counted from the database clock when the task is
enqueued (not from ``run_after``): a run_after that late could never run, and before the fix
the task was accepted and later failed as expired without one attempt."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import tasks as demo

from durable_schedule import work
from durable_schedule.errors import DueAfterDeadline
from durable_schedule.tasks.compat import TaskResultStatus
from tests.conftest import T0
from tests.tasks.conftest import SCOPE

pytestmark = pytest.mark.django_db
# async_sleep_bounded has deadline_after = 1 second: its deadline is T0 + 1 s.
DEADLINE = T0 + timedelta(seconds=1)


@pytest.mark.parametrize("run_after", [DEADLINE, DEADLINE + timedelta(hours=1)],
                         ids=["at", "after"])
def test_task__run_after_at_or_after_its_deadline_is_refused(clock, run_after):
    with pytest.raises(DueAfterDeadline) as caught:
        demo.async_sleep_bounded.using(run_after=run_after).enqueue(0)
    assert caught.value.code == "DS218"
    assert caught.value.context["deadline"] == DEADLINE.isoformat()
    assert work.list(SCOPE) == []


def test_task__run_after_before_its_deadline_is_accepted(clock):
    result = demo.async_sleep_bounded.using(
        run_after=DEADLINE - timedelta(microseconds=1)).enqueue(0)
    assert result.status == TaskResultStatus.READY
    assert [str(w.work_id) for w in work.list(SCOPE)] == [result.id]


def test_task__run_after_without_a_deadline_is_not_bounded(clock):
    result = demo.add.using(run_after=T0 + timedelta(days=365)).enqueue(1, 1)
    assert result.status == TaskResultStatus.READY
