"""A periodic task runs in its schedule's scope: every occurrence's Work goes there. A task with
a fixed ``scope`` option therefore belongs to a schedule of that scope only; a schedule of
another scope given its target is refused with DS272 and nothing is written (docs/tasks.md
"Periodic tasks"). Before, the schedule was created and every run went into the schedule's
scope, silently ignoring the task's fixed scope."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import tasks as demo

from durable_schedule import schedules, tasks
from durable_schedule.errors import TaskScopeMismatch
from durable_schedule.processor import process_due
from durable_schedule.schedules import declared
from durable_schedule.store.models import ScheduleDefinition, Work
from tests.conftest import T0

pytestmark = pytest.mark.django_db(transaction=True)
HOURLY = schedules.Every(timedelta(hours=1), anchor=T0)


def test_create__in_another_scope_than_the_tasks_fixed_scope_is_refused_ds272(committed_clock):
    with pytest.raises(TaskScopeMismatch) as caught:
        schedules.create("demo", "report", HOURLY, tasks.target(demo.fixed_scope_report, 1))
    assert caught.value.code == "DS272"
    assert caught.value.context["task_scope"] == "fixed-tenant"
    assert caught.value.context["schedule_scope"] == "demo"
    assert not ScheduleDefinition.objects.exists()
    committed_clock.advance(timedelta(hours=1))
    process_due(max_schedules=10, lease_owner="tests")
    assert not Work.objects.exists()


def test_create__in_the_tasks_fixed_scope_runs_there(committed_clock):
    schedules.create("fixed-tenant", "report", HOURLY, tasks.target(demo.fixed_scope_report, 1))
    committed_clock.advance(timedelta(hours=1))
    assert process_due(max_schedules=10, lease_owner="tests").materialized == 1
    assert list(Work.objects.values_list("scope_id", flat=True)) == ["fixed-tenant"]


def test_update__to_a_target_of_a_task_fixed_in_another_scope_is_refused(committed_clock):
    info = schedules.create("demo", "report", HOURLY, tasks.target(demo.add, 1, 2))
    with pytest.raises(TaskScopeMismatch):
        schedules.update("demo", "report", expected_revision=info.revision,
                         target=tasks.target(demo.fixed_scope_report, 1))
    assert schedules.get("demo", "report").generation == info.generation


def test_declare__in_another_scope_is_refused_at_declaration(committed_clock):
    with pytest.raises(TaskScopeMismatch):
        declared.declare("report", HOURLY, target=tasks.target(demo.fixed_scope_report, 1),
                         scope="demo")
    assert all(d.schedule_id != "report" for d in declared.declarations())
