"""The durable backend through the behaviours Django's documentation promises for a Tasks
backend (docs/tasks.md), written against the documented API: enqueue and aenqueue, get_result and
aget_result, refresh, using(), queue and priority validation, run_after, async tasks, a task that
raises, a task that returns a non-JSON value, and the task signals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from demo import tasks as demo
from django.db import transaction

from durable_schedule import tasks
from durable_schedule.errors import InvalidTaskArguments
from durable_schedule.tasks.compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
)
from tests.conftest import T0
from tests.tasks.conftest import SCOPE
from tests.work.conftest import OWNER, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


def backend():
    return demo.add.get_backend()


def test_backend__declares_all_four_capabilities():
    b = backend()
    assert isinstance(b, tasks.DurableBackend)
    assert (b.supports_defer, b.supports_async_task, b.supports_get_result,
            b.supports_priority) == (True, True, True, True)


def test_enqueue__accepts_work_in_the_callers_transaction(committed_clock, signalled):
    with transaction.atomic():
        result = demo.add.enqueue(2, 3)
        assert result.status == TaskResultStatus.READY
        assert signalled == []  # task_enqueued waits for the commit
    assert signalled == [("task_enqueued", "READY", result.id)]
    assert work_row(result.id, "scope_id", "work_name", "state") == (
        SCOPE, "demo.tasks.add", "pending")
    assert result.enqueued_at == T0 and result.args == [2, 3] and result.kwargs == {}


def test_enqueue__rolled_back_atomic_leaves_no_task(committed_clock, signalled):
    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        result = demo.add.enqueue(1, 1)
        raise Boom
    with pytest.raises(TaskResultDoesNotExist):
        demo.add.get_result(result.id)
    assert signalled == []


def test_run__a_worker_runs_the_task_and_the_result_says_so(committed_clock, signalled):
    result = demo.add.enqueue(20, 22)
    assert run_pass().succeeded == 1
    done = demo.add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 42
    assert done.worker_ids == [OWNER] and done.attempts == 1
    assert done.started_at == T0 and done.last_attempted_at == T0 and done.finished_at == T0
    assert done.errors == []
    assert [s[:2] for s in signalled] == [("task_enqueued", "READY"),
                                          ("task_started", "RUNNING"),
                                          ("task_finished", "SUCCESSFUL")]


def test_refresh__reloads_the_status_of_a_result_object(committed_clock):
    result = demo.add.enqueue(1, 2)
    run_pass()
    assert result.status == TaskResultStatus.READY
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3


def test_async_api__aenqueue_and_aget_result(committed_clock):
    result = async_to_sync(demo.add.aenqueue)(4, 5)
    run_pass()
    done = async_to_sync(demo.add.aget_result)(result.id)
    assert done.return_value == 9
    async_to_sync(result.arefresh)()
    assert result.status == TaskResultStatus.SUCCESSFUL


def test_async_task__runs_on_an_event_loop_in_the_worker(committed_clock):
    result = demo.async_add.enqueue(1, 2)
    run_pass()
    assert demo.async_add.get_result(result.id).return_value == 3


def test_get_result__missing_malformed_and_other_scope_ids_do_not_exist(committed_clock):
    with pytest.raises(TaskResultDoesNotExist):
        demo.add.get_result("3f6c1f8e-0000-4000-8000-000000000000")
    with pytest.raises(TaskResultDoesNotExist):
        demo.add.get_result("not-a-uuid")
    with tasks.scope("tenant-elsewhere"):
        theirs = demo.add.enqueue(1, 1)
        assert demo.add.get_result(theirs.id).status == TaskResultStatus.READY
    with pytest.raises(TaskResultDoesNotExist):
        demo.add.get_result(theirs.id)  # another scope's id: exactly like a missing one


def test_get_result__of_another_task_is_a_mismatch(committed_clock):
    from durable_schedule.tasks.compat import Task  # noqa: F401 -- the framework is loaded

    result = demo.add.enqueue(1, 1)
    with pytest.raises(Exception, match="Task does not match"):
        demo.send_welcome.get_result(result.id)


def test_using__validates_queue_priority_and_run_after():
    with pytest.raises(InvalidTask):
        demo.add.using(queue_name="no-such-queue")
    with pytest.raises(InvalidTask):
        demo.add.using(priority=101)
    with pytest.raises(InvalidTask):
        demo.add.using(priority=-101)
    from datetime import datetime

    with pytest.raises(InvalidTask):
        demo.add.using(run_after=datetime(2030, 1, 1, 12, 0))  # naive
    assert demo.add.using(priority=-100, queue_name="emails").priority == -100


def test_run_after__in_the_future_waits_and_in_the_past_runs_now(committed_clock):
    later = demo.add.using(run_after=T0 + timedelta(hours=1)).enqueue(1, 1)
    earlier = demo.add.using(run_after=T0 - timedelta(hours=1)).enqueue(2, 2)
    assert run_pass().succeeded == 1
    assert demo.add.get_result(earlier.id).status == TaskResultStatus.SUCCESSFUL
    assert demo.add.get_result(later.id).status == TaskResultStatus.READY
    committed_clock.advance(timedelta(hours=1))
    assert run_pass().succeeded == 1
    assert demo.add.get_result(later.id).return_value == 2


def test_arguments__non_json_is_refused_at_enqueue_naming_the_argument(committed_clock):
    with pytest.raises(InvalidTaskArguments, match="DS241") as caught:
        demo.send_welcome.enqueue(7, template={"when": T0})
    assert caught.value.context["path"] == "kwargs['template']['when']"
    assert caught.value.context["got"] == "datetime"
    with pytest.raises(TypeError):  # also a TypeError, as Django's own backends raise
        demo.add.enqueue(float("nan"), 1)
    from durable_schedule.store.models import Work

    assert Work.objects.count() == 0


def test_failing_task__records_the_exception_and_retries_under_the_policy(committed_clock,
                                                                         signalled):
    result = demo.always_fails.enqueue("no luck")
    assert run_pass().retried == 1
    after = demo.always_fails.get_result(result.id)
    assert after.status == TaskResultStatus.READY  # retried later under the retry policy
    assert [e.exception_class_path for e in after.errors] == ["builtins.ValueError"]
    assert "no luck" in after.errors[0].traceback
    assert signalled[-1][:2] == ("task_finished", "FAILED")


def test_non_json_return_value__fails_the_attempt(committed_clock):
    result = demo.returns_a_set.enqueue()
    run_pass()
    after = demo.returns_a_set.get_result(result.id)
    assert after.status == TaskResultStatus.READY and after.errors
    assert after.errors[0].exception_class_path == "builtins.TypeError"


def test_context__attempt_is_the_runtime_attempt_number(committed_clock):
    result = demo.record.enqueue("ctx")
    run_pass()
    done = demo.record.get_result(result.id)
    assert done.return_value == 1 and done.attempts == 1


def test_periodic_task__a_task_is_the_target_of_a_schedule(committed_clock):
    from durable_schedule import schedules

    schedules.create(SCOPE, "every-hour-add", schedules.Every(timedelta(hours=1)),
                     tasks.target(demo.add, 40, 2))
    committed_clock.advance(timedelta(hours=1))
    from durable_schedule.processor import process_due

    assert process_due(max_schedules=10, lease_owner="tests").materialized == 1
    assert run_pass().succeeded == 1
    from durable_schedule.store.models import Work

    work_id = Work.objects.get(work_name="demo.tasks.add").work_id
    assert demo.add.get_result(str(work_id)).return_value == 42


def test_async_task__is_cancelled_at_its_deadline(committed_clock):
    # The deadline is one second after acceptance (database clock, held at T0); the worker
    # cancels the coroutine at its local cancel point instead of letting it sleep 10 minutes.
    result = demo.async_sleep_bounded.enqueue(600)
    run_pass()
    after = demo.async_sleep_bounded.get_result(result.id)
    assert after.errors and after.errors[0].exception_class_path == "builtins.TimeoutError"
    committed_clock.advance(timedelta(seconds=2))  # past the deadline: admission is closed
    run_pass()
    final = demo.async_sleep_bounded.get_result(result.id)
    assert final.status == TaskResultStatus.FAILED and final.is_finished
    assert work_row(result.id, "state") == ("expired",)


def test_priority__honoured_under_a_backlog(committed_clock):
    low = [demo.record.using(priority=-10).enqueue(f"low-{i}") for i in range(5)]
    high = [demo.record.using(priority=50).enqueue(f"high-{i}") for i in range(5)]
    assert run_pass(max_items=5, batch=1).succeeded == 5
    assert {demo.record.get_result(r.id).status for r in high} == {TaskResultStatus.SUCCESSFUL}
    assert {demo.record.get_result(r.id).status for r in low} == {TaskResultStatus.READY}
    done = demo.record.get_result(high[0].id)
    assert done.task.priority == 50 and done.task.queue_name == "default"


def test_queue_name__routes_the_task_to_its_queue(committed_clock):
    result = demo.send_welcome.enqueue(7)  # @task(queue_name="emails", priority=10)
    assert work_row(result.id, "queue_name", "priority") == ("emails", 10)
    assert run_pass(max_items=5, queues=["default"]).claimed == 0
    assert run_pass(max_items=5, queues=["emails"]).succeeded == 1
    assert demo.send_welcome.get_result(result.id).task.queue_name == "emails"


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_enqueue__a_transaction_on_another_alias_does_not_include_the_task(committed_clock):
    # The task is written through the store's alias ("default"), which has no transaction open
    # here, so it commits at once: rolling back the other alias's transaction keeps it.
    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic(using="other"):
        result = demo.add.enqueue(5, 5)
        raise Boom
    assert demo.add.get_result(result.id).status == TaskResultStatus.READY


def test_decorator_options__forwarded_to_the_durable_task(committed_clock):
    if not demo.FORWARDS_OPTIONS:
        pytest.skip("Django 6.0's @task takes no extra options (6.1 and the backport do)")
    result = demo.versioned.enqueue(7)
    row = work_row(result.id, "work_version", "execution_deadline")
    assert row == ("v3", T0 + timedelta(minutes=5))
    run_pass()
    assert demo.versioned.get_result(result.id).return_value == 7
