"""An admitted attempt that was never invoked is no attempt of the task (docs/tasks.md "Status
mapping": ``worker_ids`` are the lease owners of the attempts, so ``attempts`` and
``TaskContext.attempt`` are the runtime's attempt number).

A stopping worker hands back an attempt it admitted but will not start (and a worker whose
local budget ran out before the call does not invoke it): the runtime records ``not_invoked``
and takes the attempt number back. Before, the result still counted that admission: READY with
``started_at`` set and a worker id for a task that never started, and after the next run
``attempts == 2`` while the task ran once, with ``context.attempt == 1``.
"""

from __future__ import annotations

import pytest
from demo import tasks as demo

from durable_schedule.tasks.compat import TaskResultStatus, signals
from tests.conftest import T0
from tests.work.conftest import OWNER, run_pass

pytestmark = pytest.mark.django_db(transaction=True)


def stop_after_admission():
    """A stop callable that lets the pass claim and admit, then stops before the invocation."""
    answers = iter([False])
    return lambda: next(answers, True)


def test_handed_back_attempt__is_not_counted_as_started(committed_clock):
    result = demo.record.enqueue("k")
    assert run_pass(stop=stop_after_admission()).released == 1

    handed_back = demo.record.get_result(result.id)
    assert handed_back.status == TaskResultStatus.READY
    assert handed_back.worker_ids == [] and handed_back.attempts == 0
    assert handed_back.started_at is None and handed_back.last_attempted_at is None


def test_handed_back_attempt__the_run_after_it_is_attempt_one(committed_clock):
    started = []

    def receive(sender, task_result, **kwargs):
        started.append(task_result.attempts)

    result = demo.record.enqueue("k")
    run_pass(stop=stop_after_admission())
    signals.task_started.connect(receive, weak=False)
    try:
        assert run_pass().succeeded == 1
    finally:
        signals.task_started.disconnect(receive)

    done = demo.record.get_result(result.id)
    assert done.return_value == 1  # context.attempt in the run
    assert started == [1]
    assert done.worker_ids == [OWNER] and done.attempts == 1
    assert done.started_at == T0
