"""A run_after whose offset puts it outside the UTC range is InvalidTask from using(), as a
naive one is. Before, using() accepted it and enqueue() raised DS215 WorkArithmeticOutOfRange
(not an InvalidTask) only when the task was enqueued."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from demo import tasks as demo

from durable_schedule.store.models import Work
from durable_schedule.tasks.compat import InvalidTask

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "run_after",
    [
        datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))),
        datetime.min.replace(tzinfo=timezone(timedelta(hours=14))),
        datetime.max.replace(tzinfo=timezone(-timedelta(hours=1))),
    ],
)
def test_using__a_run_after_outside_the_utc_range_is_invalid(committed_clock, run_after):
    with pytest.raises(InvalidTask, match="run_after") as caught:
        demo.add.using(run_after=run_after)
    assert "UTC range" in str(caught.value)
    assert not Work.objects.exists()


@pytest.mark.parametrize(
    "run_after",
    [
        datetime.max.replace(tzinfo=UTC),
        datetime.min.replace(tzinfo=UTC),
        datetime(2030, 1, 1, 12, tzinfo=timezone(timedelta(hours=5))),
    ],
)
def test_using__a_run_after_inside_the_utc_range_is_the_due_time(committed_clock, run_after):
    result = demo.add.using(run_after=run_after).enqueue(1, 2)
    assert demo.add.get_result(result.id).task.run_after == run_after
