"""A durable task's ``scope`` option that is no scope id is refused like every other bad option
(docs/tasks.md "Options" and "Workers"):

* in ``TASK_OPTIONS``, when the backend is built, with DS243 naming the task and the option
  (it was DS301 with no word of which setting held it);
* on the task (``@task(scope=...)``, ``@options(scope=...)``), by ``validate_task`` with
  ``InvalidTask``, as Django's contract says and as a bad ``version`` or ``safety`` is (it
  escaped as ``InvalidScope``);
* in a worker whose backend holds a bad scope for the task (options changed after the backend
  was built), by suspending that task's Work while the rest of the pass runs: the
  ``InvalidScope`` escaped the claim, so the whole pass raised and nothing ran.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from demo import tasks as demo_tasks

from durable_schedule import tasks
from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.store.models import Work
from durable_schedule.tasks import DurableBackend
from durable_schedule.tasks.compat import InvalidTask
from durable_schedule.work import registry
from tests.tasks.conftest import run_pass

TASK = "demo.tasks.add"
BAD_SCOPES = ["", " tenant-7", 5, "a" * 201]


@pytest.mark.parametrize("scope", BAD_SCOPES)
def test_task_options__a_bad_scope_is_ds243_when_the_backend_is_built(scope):
    with pytest.raises(InvalidTaskOptions, match="DS243") as caught:
        DurableBackend("checked", {"BACKEND": "durable_schedule.tasks.DurableBackend",
                                   "OPTIONS": {"TASK_OPTIONS": {TASK: {"scope": scope}}}})
    assert "scope" in caught.value.message and TASK in caught.value.message


@pytest.mark.parametrize("scope", BAD_SCOPES)
def test_task__a_bad_scope_on_the_task_is_invalid_task(scope):
    with pytest.raises(InvalidTask, match="scope"):
        dataclasses.replace(demo_tasks.add, scope=scope)
    with pytest.raises(InvalidTask, match="scope"):
        tasks.options(scope=scope)(demo_tasks.add)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scope", ["", 5])
def test_worker__a_scope_option_a_deploy_broke_suspends_only_that_tasks_work(
        committed_clock, monkeypatch, caplog, scope):
    stranded = demo_tasks.add.enqueue(1, 2)
    healthy = demo_tasks.send_welcome.enqueue(7)
    backend = demo_tasks.add.get_backend()
    monkeypatch.setitem(backend.options, "TASK_OPTIONS", {TASK: {"scope": scope}})
    registry._unregister(TASK, "v1")  # a worker that never enqueued it
    counts = run_pass(max_items=5, queues=["default", "emails"])
    assert counts.succeeded == 1
    states = dict(Work.objects.values_list("work_id", "state"))
    assert states == {uuid.UUID(healthy.id): "succeeded", uuid.UUID(stranded.id): "suspended"}
    assert any("options" in r.getMessage() and TASK in r.getMessage() for r in caplog.records)
