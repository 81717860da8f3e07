"""``tasks.target()`` refuses what a schedule target cannot carry instead of dropping it
silently (docs/tasks.md "Periodic tasks"): ``run_after`` (one absolute instant for a target
that runs at every due instant). A task's queue and priority are kept: the schedule's Work
runs on the task's queue at its priority, as ``task.enqueue()`` would put it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from demo import tasks as demo

from durable_schedule import schedules, tasks
from durable_schedule.errors import InvalidQueue, InvalidTaskOptions
from durable_schedule.processor import process_due
from durable_schedule.store.models import Work
from tests.conftest import T0
from tests.tasks.conftest import SCOPE, run_pass

pytestmark = pytest.mark.django_db(transaction=True)
LATER = datetime(2031, 1, 1, tzinfo=UTC)


def test_target__run_after_is_refused_ds243(committed_clock):
    with pytest.raises(InvalidTaskOptions) as caught:
        tasks.target(demo.add.using(run_after=LATER), 1, 2)
    assert caught.value.code == "DS243" and "run_after" in str(caught.value)


def test_target__a_routed_task_keeps_its_queue_and_priority(committed_clock):
    # send_welcome is declared with @task(queue_name="emails", priority=10): the schedule's
    # Work runs there, served by a worker of that queue, as send_welcome.enqueue() would.
    schedules.create(SCOPE, "hourly-welcome", schedules.Every(timedelta(hours=1)),
                     tasks.target(demo.send_welcome, 7))
    committed_clock.advance(timedelta(hours=1))
    assert process_due(max_schedules=10, lease_owner="tests").materialized == 1
    assert list(Work.objects.values_list("queue_name", "priority")) == [("emails", 10)]
    assert run_pass(max_items=5, queues=["default"]).claimed == 0
    assert run_pass(max_items=5, queues=["emails"]).succeeded == 1
    work_id = Work.objects.get().work_id
    result = demo.send_welcome.get_result(str(work_id))
    assert (result.task.queue_name, result.task.priority) == ("emails", 10)
    assert result.return_value == {"sent_to": 7, "template": "welcome"}


@pytest.mark.parametrize(("task", "args", "routing"), [
    (lambda: demo.add.using(priority=5), (7, 1), ("default", 5)),
    (lambda: demo.send_welcome.using(priority=0), (7,), ("emails", 0)),
    (lambda: demo.send_welcome.using(queue_name="default", priority=-3), (7,),
     ("default", -3)),
    (lambda: demo.add, (7, 1), ("default", 0)),
])
def test_target__using_overrides_the_routing_of_the_target(committed_clock, task, args,
                                                           routing):
    # add takes two arguments: a target with one would be refused (DS271, docs/tasks.md).
    target = tasks.target(task(), *args)
    assert (target.queue, target.priority) == routing
    assert ("queue" in target.to_json()) is (routing[0] != "default")


def test_target__an_unrouted_task_stores_the_target_it_stored_before(committed_clock):
    target = tasks.target(demo.add.using(queue_name="default", priority=0), 1, 2)
    assert "queue" not in target.to_json() and "priority" not in target.to_json()
    schedules.create(SCOPE, "hourly-add", schedules.Every(timedelta(hours=1)), target)
    committed_clock.advance(timedelta(hours=1))
    assert process_due(max_schedules=10, lease_owner="tests").materialized == 1
    assert list(Work.objects.values_list("queue_name", "priority")) == [("default", 0)]


def test_target__a_queue_outside_durable_queues_is_refused_ds244(committed_clock, settings):
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}
    with pytest.raises(InvalidQueue) as caught:
        tasks.target(demo.send_welcome, 7)
    assert caught.value.code == "DS244"


def test_declared__a_task_schedule_declared_in_code_is_routed_and_stays_unchanged(
        committed_clock):
    from durable_schedule.schedules import declared

    def declaration(priority: int) -> declared.Declaration:
        return declared.Declaration(
            scope=SCOPE, schedule_id="declared-welcome",
            spec=schedules.Every(timedelta(hours=1), anchor=T0),
            target=tasks.target(demo.send_welcome.using(priority=priority), 7))

    assert declared.sync(declared=[declaration(10)]).created == [(SCOPE, "declared-welcome")]
    assert declared.sync(declared=[declaration(10)]).unchanged == [(SCOPE, "declared-welcome")]
    committed_clock.advance(timedelta(hours=1))
    assert process_due(max_schedules=10, lease_owner="tests").materialized == 1
    assert list(Work.objects.values_list("queue_name", "priority")) == [("emails", 10)]
    # Another priority is another target: exactly one new generation.
    report = declared.sync(declared=[declaration(20)])
    assert report.updated == [(SCOPE, "declared-welcome", ["target"])]
    assert schedules.get(SCOPE, "declared-welcome").generation == 2
