"""An async task's own CancelledError is recorded as raised. Before the fix every
CancelledError inside an async task was reported as ``TimeoutError: ... its lease or deadline
ended`` -- also when no lease or deadline had ended -- which sends an operator looking for a
timeout that never happened. The runtime's cancel at the deadline stays a TimeoutError
(tests/tasks/test_backend.py::test_async_task__is_cancelled_at_its_deadline)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import tasks as demo

from durable_schedule.tasks.compat import TaskResultStatus, signals
from tests.conftest import T0
from tests.work.conftest import run_pass

pytestmark = pytest.mark.django_db(transaction=True)


def test_async_task__its_own_cancelled_await_is_recorded_as_raised(committed_clock):
    result = demo.awaits_a_cancelled_future.enqueue()
    counts = run_pass()
    assert (counts.admitted, counts.retried) == (1, 1)
    after = demo.awaits_a_cancelled_future.get_result(result.id)
    assert after.status == TaskResultStatus.READY  # retried under the policy
    assert [e.exception_class_path for e in after.errors] == [
        "asyncio.exceptions.CancelledError"]


def test_late_result__the_failed_result_names_the_deadline(committed_clock):
    # The task finishes after its deadline (the database clock moves past D while it runs):
    # the result is quarantined and the Work ends expired through late_result_quarantined.
    # Before the fix errors[-1] read only "the Work is expired": the reason was looked for in
    # an "expired" event this path never writes.
    def finish_late(sender, task_result, **kwargs):
        committed_clock.set(T0 + timedelta(seconds=2))  # deadline_after is one second

    signals.task_started.connect(finish_late, weak=False)
    try:
        result = demo.async_sleep_bounded.enqueue(0)
        counts = run_pass()
    finally:
        signals.task_started.disconnect(finish_late)
    assert (counts.quarantined, counts.expired) == (1, 1)
    after = demo.async_sleep_bounded.get_result(result.id)
    assert after.status == TaskResultStatus.FAILED
    last = after.errors[-1]
    assert last.exception_class_path == "durable_schedule.tasks.results.TaskExpired"
    assert last.traceback == ("durable_schedule.tasks.results.TaskExpired: the Work is expired"
                              " (reason=deadline)\n")
