"""A FAILED TaskResult always ends ``errors`` with why it failed (docs/tasks.md "Status
mapping"). Django's FAILED means "raised an exception during execution, or was unable to
start"; Work that expired or was canceled before any attempt ran used to read FAILED with
``errors == []``, so ``errors[-1]`` raised IndexError and the reason was unreadable."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from demo import tasks as demo

from durable_schedule import work
from durable_schedule.tasks.compat import TaskResultStatus
from durable_schedule.tasks.results import TaskCanceled, TaskEnded, TaskExpired, TaskSuspended
from tests.tasks.conftest import SCOPE
from tests.work.conftest import run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


def test_expired_before_any_attempt__errors_name_the_expiry(committed_clock):
    result = demo.async_sleep_bounded.enqueue(600)
    committed_clock.advance(timedelta(seconds=2))  # past the 1 s deadline: admission refused
    assert run_pass().expired == 1
    after = demo.async_sleep_bounded.get_result(result.id)
    assert after.status == TaskResultStatus.FAILED and after.attempts == 0
    assert [e.exception_class for e in after.errors] == [TaskExpired]
    assert "reason=deadline" in after.errors[-1].traceback


def test_canceled_before_any_attempt__errors_name_the_cancel(committed_clock):
    result = demo.add.enqueue(1, 2)
    work.cancel(SCOPE, result.id, actor="ops")
    after = demo.add.get_result(result.id)
    assert after.status == TaskResultStatus.FAILED
    assert [e.exception_class for e in after.errors] == [TaskCanceled]
    assert issubclass(after.errors[-1].exception_class, TaskEnded)


def test_expired_after_a_failed_attempt__attempt_error_then_the_expiry(committed_clock):
    result = demo.async_sleep_bounded.enqueue(600)
    run_pass()  # the attempt is cancelled at the deadline: TimeoutError, retry scheduled
    committed_clock.advance(timedelta(seconds=2))
    run_pass()
    assert work_row(uuid.UUID(result.id), "state") == ("expired",)
    final = demo.async_sleep_bounded.get_result(result.id)
    paths = [e.exception_class_path for e in final.errors]
    assert paths[0] == "builtins.TimeoutError" and final.errors[-1].exception_class is TaskExpired
    assert len(paths) == 2


def test_succeeded_and_retrying_results_get_no_end_entry(committed_clock):
    done = demo.add.enqueue(1, 2)
    failing = demo.always_fails.enqueue("no luck")
    run_pass()
    assert demo.add.get_result(done.id).errors == []
    retrying = demo.always_fails.get_result(failing.id)
    assert retrying.status == TaskResultStatus.READY
    assert [e.exception_class_path for e in retrying.errors] == ["builtins.ValueError"]


def test_suspended_before_any_attempt__errors_end_with_the_suspension(committed_clock):
    from durable_schedule.work.enqueue import WorkRequest

    # Task Work of a version no worker defines: the runtime suspends it (unknown_definition).
    accepted = work.enqueue(SCOPE, WorkRequest("c", "k", "demo.tasks.add", "v999",
                                               {"args": [1, 2], "kwargs": {}}, "idempotent"))
    assert run_pass().suspended == 1
    after = demo.add.get_result(str(accepted.work_id))
    assert after.status == TaskResultStatus.FAILED and after.attempts == 0
    assert after.errors[-1].exception_class is TaskSuspended
    assert "reason=unknown_definition" in after.errors[-1].traceback
