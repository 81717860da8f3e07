"""A reconcile_before_retry task whose lost attempt a reconciler settles gets its
``task_finished`` (docs/tasks.md "Signals").

The attempt that was lost (the worker stopped after the effect, before the outcome) sent
``task_started`` and no ``task_finished``; the next claim reconciles it, and an ``Applied``
proof ends the Work ``succeeded`` without another attempt. Before, no ``task_finished`` was ever
sent for that task: a receiver waiting for it (to notify the customer the charge went through)
never heard, although ``get_result`` read SUCCESSFUL.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import tasks as demo
from demo.models import Effect

from durable_schedule.tasks.compat import TaskResultStatus, signals
from durable_schedule.tasks.results import TaskSuspended
from tests.work.conftest import run_pass

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def finished():
    seen = []

    def receive(sender, task_result, **kwargs):
        seen.append(task_result)

    signals.task_finished.connect(receive, weak=False)
    yield seen
    signals.task_finished.disconnect(receive)


def test_applied_proof__task_finished_says_successful(committed_clock, finished):
    result = demo.charge_then_stop.enqueue(42)
    with pytest.raises(SystemExit):
        run_pass()
    assert finished == []  # the lost attempt recorded no outcome
    committed_clock.advance(timedelta(hours=1))  # its lease ends
    counts = run_pass()
    assert counts.reconciled == 1 and counts.succeeded == 1
    assert Effect.objects.filter(work_id=result.id).count() == 1  # not charged twice

    stored = demo.charge_then_stop.get_result(result.id)
    assert stored.status == TaskResultStatus.SUCCESSFUL
    [signalled] = finished
    assert signalled.id == result.id
    assert signalled.status == TaskResultStatus.SUCCESSFUL
    assert signalled.return_value == stored.return_value == {"charged": 42}


def test_not_applied__only_the_next_attempt_sends_task_finished(committed_clock, finished):
    result = demo.charge_then_stop.enqueue(7)
    with pytest.raises(SystemExit):
        run_pass()
    Effect.objects.filter(work_id=result.id).delete()  # the charge did not go through
    committed_clock.advance(timedelta(hours=1))
    assert run_pass().reconciled == 1  # NotApplied: a retry is scheduled
    assert finished == []  # nothing ended: READY for the next attempt
    committed_clock.advance(timedelta(hours=1))
    assert run_pass().succeeded == 1

    [signalled] = finished  # attempt 2's only
    assert signalled.status == TaskResultStatus.SUCCESSFUL and signalled.attempts == 2
    assert signalled.return_value == {"charged": 7}


def test_unknown__the_suspension_is_signalled_failed(committed_clock, finished):
    result = demo.stop_unreconcilable.enqueue(9)
    with pytest.raises(SystemExit):
        run_pass()
    committed_clock.advance(timedelta(hours=1))
    assert run_pass().suspended == 1

    [signalled] = finished
    stored = demo.stop_unreconcilable.get_result(result.id)
    assert signalled.status == stored.status == TaskResultStatus.FAILED
    assert signalled.errors[-1].exception_class is TaskSuspended
