"""An async task's own CancelledError is recorded as raised. Before the fix every
CancelledError inside an async task was reported as ``TimeoutError: ... its lease or deadline
ended`` -- also when no lease or deadline had ended -- which sends an operator looking for a
timeout that never happened. The runtime's cancel at the deadline stays a TimeoutError
(tests/tasks/test_backend.py::test_async_task__is_cancelled_at_its_deadline)."""

from __future__ import annotations

import pytest
from demo import tasks as demo

from durable_schedule.tasks.compat import TaskResultStatus
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
