"""``tasks.target()`` refuses what a schedule target cannot carry instead of dropping it
silently (docs/tasks.md "Periodic tasks"): ``run_after`` (one absolute instant for a target
that runs at every due instant) and a queue/priority other than the default (a schedule
target has no routing, so the Work would land on queue "default", priority 0)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from demo import tasks as demo

from durable_schedule import schedules, tasks
from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.processor import process_due
from durable_schedule.store.models import Work
from tests.tasks.conftest import SCOPE

pytestmark = pytest.mark.django_db(transaction=True)
LATER = datetime(2031, 1, 1, tzinfo=UTC)


def test_target__run_after_is_refused_ds243(committed_clock):
    with pytest.raises(InvalidTaskOptions) as caught:
        tasks.target(demo.add.using(run_after=LATER), 1, 2)
    assert caught.value.code == "DS243" and "run_after" in str(caught.value)


@pytest.mark.parametrize("routed", [
    lambda: demo.send_welcome,  # declared with queue "emails", priority 10
    lambda: demo.add.using(priority=5),
    lambda: demo.send_welcome.using(priority=0),
])
def test_target__a_routed_task_is_refused_ds243(committed_clock, routed):
    with pytest.raises(InvalidTaskOptions, match="DS243"):
        tasks.target(routed(), 7)


def test_target__an_unrouted_task_runs_on_the_default_queue(committed_clock):
    schedules.create(SCOPE, "hourly-add", schedules.Every(timedelta(hours=1)),
                     tasks.target(demo.add.using(queue_name="default", priority=0), 1, 2))
    committed_clock.advance(timedelta(hours=1))
    assert process_due(max_schedules=10, lease_owner="tests").materialized == 1
    # This is the routing every scheduled task's Work gets, hence the refusals above.
    assert list(Work.objects.values_list("queue_name", "priority")) == [("default", 0)]
