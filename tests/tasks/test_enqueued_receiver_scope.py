"""A ``task_enqueued`` receiver sees the scope the task was accepted into as its ambient scope
(docs/tasks.md "Scopes"), as the worker-side receivers see the Work's scope.

The signal waits for the commit, which may come after the ``with tasks.scope(...)`` block that
enqueued the task has closed: the receiver then ran in the caller's scope of that moment, and
``task_result.refresh()`` (or ``get_result``) in it answered ``TaskResultDoesNotExist`` for the
task it was told about.
"""

from __future__ import annotations

import pytest
from demo import tasks as demo
from django.db import transaction

from durable_schedule import tasks
from durable_schedule.tasks import scoping
from durable_schedule.tasks.compat import TaskResultStatus, signals

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def refreshed():
    seen = []

    def receive(sender, task_result, **kwargs):
        seen.append(scoping.ambient())
        task_result.refresh()
        seen.append(task_result.status)

    signals.task_enqueued.connect(receive, weak=False)
    yield seen
    signals.task_enqueued.disconnect(receive)


def test_task_enqueued__a_receiver_after_the_block_sees_the_tasks_scope(committed_clock,
                                                                       refreshed):
    with transaction.atomic():
        with tasks.scope("tenant-7"):
            demo.add.enqueue(1, 2)
    assert refreshed == ["tenant-7", TaskResultStatus.READY]


def test_task_enqueued__a_fixed_scope_task_is_announced_in_its_scope(committed_clock,
                                                                    refreshed):
    demo.fixed_scope_report.enqueue(1)
    assert refreshed == ["fixed-tenant", TaskResultStatus.READY]
