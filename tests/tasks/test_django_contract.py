"""The backend against Django's own Tasks contract where the two used to part (docs/tasks.md
"Signals", "Status mapping"): a raising signal receiver cannot change a task's outcome,
``get_result`` shows the task as it was enqueued (``run_after`` and the backend too, as Django's
database backend does, so ``refresh()`` asks the backend that holds the result), and a naive
``run_after`` or a queue name no Work can have is an ``InvalidTask`` from ``validate_task``."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest
from demo import tasks as demo
from django.db import transaction
from django.test import override_settings

from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.tasks import DurableBackend
from durable_schedule.tasks.compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
    signals,
)
from tests.conftest import T0
from tests.work.conftest import history, run_pass

pytestmark = pytest.mark.django_db(transaction=True)


class ReceiverBug(Exception):
    pass


@pytest.fixture
def raising_receiver():
    """``raising_receiver(signal)``: connect a receiver that raises ReceiverBug."""
    connected = []

    def connect(signal):
        def boom(sender, task_result, **kwargs):
            raise ReceiverBug(f"receiver of {task_result.id} failed")
        signal.connect(boom, weak=False)
        connected.append((signal, boom))

    yield connect
    for signal, boom in connected:
        signal.disconnect(boom)


def test_task_finished__a_raising_receiver_does_not_fail_a_task_that_returned(
        committed_clock, raising_receiver, caplog):
    # Before: the receiver's exception became the attempt's, the Work was retry_scheduled and
    # the task ran again (its side effects twice).
    raising_receiver(signals.task_finished)
    result = demo.add.enqueue(2, 3)
    with caplog.at_level(logging.ERROR, logger="durable_schedule.tasks"):
        counts = run_pass()
    assert (counts.succeeded, counts.retried) == (1, 0)
    done = demo.add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 5
    assert done.errors == [] and history(result.id) == ["accepted", "admitted", "succeeded"]
    logged = [r for r in caplog.records if r.name == "durable_schedule.tasks"]
    assert len(logged) == 1 and logged[0].exc_info[0] is ReceiverBug
    assert result.id in logged[0].getMessage()


def test_task_finished__a_raising_receiver_keeps_the_tasks_own_error(committed_clock,
                                                                    raising_receiver):
    # Before: errors held the receiver's ReceiverBug instead of what the task raised.
    raising_receiver(signals.task_finished)
    result = demo.always_fails.enqueue("no luck")
    assert run_pass().retried == 1
    after = demo.always_fails.get_result(result.id)
    assert [e.exception_class_path for e in after.errors] == ["builtins.ValueError"]
    assert "ReceiverBug" not in after.errors[0].traceback


def test_task_enqueued__a_raising_receiver_does_not_make_enqueue_raise(committed_clock,
                                                                      raising_receiver):
    # Before: enqueue() raised for a task it had accepted (autocommit), and inside atomic() the
    # exception left the block after the commit and skipped the transaction's later callbacks.
    raising_receiver(signals.task_enqueued)
    alone = demo.add.enqueue(1, 1)
    assert demo.add.get_result(alone.id).status == TaskResultStatus.READY
    later = []
    with transaction.atomic():
        inside = demo.add.enqueue(2, 2)
        transaction.on_commit(lambda: later.append("ran"))
    assert later == ["ran"]
    assert demo.add.get_result(inside.id).status == TaskResultStatus.READY


def test_get_result__the_task_keeps_its_run_after(committed_clock):
    # Before: get_result(...).task.run_after was None whatever enqueue was given.
    when = T0 + timedelta(hours=1)
    later = demo.add.using(run_after=when).enqueue(1, 1)
    past = demo.add.using(run_after=T0 - timedelta(hours=1)).enqueue(1, 2)
    now = demo.add.enqueue(1, 3)
    assert demo.add.get_result(later.id).task.run_after == when
    assert demo.add.get_result(later.id).task == later.task
    assert demo.add.get_result(past.id).task.run_after == T0 - timedelta(hours=1)
    assert demo.add.get_result(now.id).task.run_after is None
    committed_clock.advance(timedelta(hours=2))
    assert run_pass().succeeded == 3  # kept after the run too (due_at is not the source)
    assert demo.add.get_result(later.id).task.run_after == when


def test_get_result__the_task_names_the_backend_that_holds_the_result(committed_clock):
    # Before: the task of a result read through "tenant" still named "default", so refresh()
    # asked the default backend (another scope) and raised TaskResultDoesNotExist.
    both = {"default": {"BACKEND": "durable_schedule.tasks.DurableBackend",
                        "QUEUES": ["default", "emails"], "OPTIONS": {"SCOPE": "demo"}},
            "tenant": {"BACKEND": "durable_schedule.tasks.DurableBackend",
                       "OPTIONS": {"SCOPE": "tenant-b"}}}
    with override_settings(TASKS=both):
        result = demo.add.using(backend="tenant").enqueue(3, 4)
        assert result.task.backend == "tenant" and result.backend == "tenant"
        with pytest.raises(TaskResultDoesNotExist):
            demo.add.get_result(result.id)  # the default backend's scope does not hold it
        read = demo.add.using(backend="tenant").get_result(result.id)
        assert read.backend == "tenant" and read.task.backend == "tenant"
        assert run_pass().succeeded == 1
        read.refresh()
        assert read.status == TaskResultStatus.SUCCESSFUL and read.return_value == 7


def test_run_after__naive_is_invalid_also_without_use_tz(committed_clock):
    # Before: using() accepted it and enqueue() failed with DS406 (InvalidArgument).
    with override_settings(USE_TZ=False):
        with pytest.raises(InvalidTask, match="aware"):
            demo.add.using(run_after=datetime(2030, 1, 1, 12, 0))
    from durable_schedule.store.models import Work

    assert Work.objects.count() == 0


@pytest.mark.parametrize("queue", ["", " padded ", "x" * 201, 5])
def test_queue_name__any_queue_backend_refuses_a_bad_name_in_using(committed_clock, queue):
    # Django's empty QUEUES admits any name; before, using() accepted one no Work can have and
    # enqueue() failed with DS115 (InvalidIdentifier, not InvalidTask).
    anything = {"default": {"BACKEND": "durable_schedule.tasks.DurableBackend", "QUEUES": [],
                            "OPTIONS": {"SCOPE": "demo"}}}
    with override_settings(TASKS=anything):
        with pytest.raises(InvalidTask, match="DS115"):
            demo.add.using(queue_name=queue)
        assert demo.add.using(queue_name="any-name").enqueue(1, 1).task.queue_name == "any-name"


def test_queues__a_bad_name_in_queues_is_refused_when_the_backend_is_built():
    with pytest.raises(InvalidTaskOptions, match="DS243") as caught:
        DurableBackend("broken", {"QUEUES": ["default", "x" * 201]})
    assert "1-200 characters" in caught.value.message


def test_task_finished__not_sent_when_the_task_stops_the_worker(committed_clock, signalled):
    # Before: task_finished said FAILED for an attempt that records no outcome (SystemExit stops
    # the worker; the attempt is recovered after its lease and may yet succeed).
    result = demo.exits.enqueue(3)
    with pytest.raises(SystemExit):
        run_pass()
    assert [s[0] for s in signalled] == ["task_enqueued", "task_started"]
    assert demo.exits.get_result(result.id).status == TaskResultStatus.RUNNING
    assert history(result.id) == ["accepted", "admitted"]


def test_get_result__a_schedule_runs_task_has_no_run_after(committed_clock, signalled):
    # An occurrence's Work is due when it is accepted (tasks.target() refuses a run_after).
    from durable_schedule import schedules, tasks
    from durable_schedule.processor import process_due
    from durable_schedule.store.models import Work

    schedules.create("demo", "late-add", schedules.Every(timedelta(hours=1)),
                     tasks.target(demo.add, 1, 2))
    committed_clock.advance(timedelta(hours=1, minutes=30))  # materialized late: due != accepted
    assert process_due(max_schedules=10, lease_owner="tests").materialized >= 1
    work = Work.objects.filter(work_name="demo.tasks.add").order_by("due_at").first()
    assert demo.add.get_result(str(work.work_id)).task.run_after is None
    run_pass()
    # the processor accepted the run: no task_enqueued; the worker ran it: started, finished
    assert [s[:2] for s in signalled] == [("task_started", "RUNNING"),
                                          ("task_finished", "SUCCESSFUL")]


def test_validate_task__a_task_outside_the_installed_apps_is_invalid():
    # Before: it was enqueued, get_result() of the id it returned raised
    # TaskResultDoesNotExist, and every attempt failed with LookupError (workers import task
    # code only from installed apps).
    import importlib

    with pytest.raises(InvalidTask, match="installed app"):
        importlib.import_module("tests.tasks.outside_app_tasks")


def test_run__the_runs_ambient_scope_is_its_works_scope(committed_clock):
    # Before: the worker ran the task with no ambient scope, so a task enqueued by a tenant's
    # task went to the backend's default scope ("demo"), and a worker-side receiver's
    # get_result() of the run's own id raised TaskResultDoesNotExist.
    from durable_schedule import tasks
    from tests.work.conftest import work_row

    seen = []

    def read_back(sender, task_result, **kwargs):
        seen.append(demo.enqueue_child.get_result(task_result.id).status)

    signals.task_finished.connect(read_back, weak=False)
    try:
        with tasks.scope("tenant-7"):
            parent = demo.enqueue_child.enqueue(1)
        assert run_pass(max_items=1).succeeded == 1
    finally:
        signals.task_finished.disconnect(read_back)
    assert seen == [TaskResultStatus.RUNNING]  # read in the run: the attempt is not stored yet
    with tasks.scope("tenant-7"):
        child_id = demo.enqueue_child.get_result(parent.id).return_value
    assert work_row(child_id, "scope_id") == ("tenant-7",)
