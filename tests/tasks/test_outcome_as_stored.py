"""What the backend reports is what the store keeps (docs/tasks.md "Signals", "Status
mapping").

A task that returns at or after its Work's absolute deadline does not succeed: the store
quarantines the value and ends the Work ``expired`` (docs/work.md "Deadlines"). Before,
``task_finished`` carried SUCCESSFUL with the value as ``return_value``, so a receiver recorded
a success the store never kept.

``errors`` are the errors of attempts (Django's TaskResult): a suspension for an unknown
definition runs no attempt. Before, resumed Work read READY with ``errors ==
[UnknownWorkDefinition]`` and no attempt, and the entry vanished again after a success.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import tasks as demo
from django.test import override_settings

from durable_schedule import work
from durable_schedule.tasks.compat import TaskResultStatus, signals
from durable_schedule.tasks.results import TaskExpired, TaskSuspended
from tests.work.conftest import run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULT = {
    "BACKEND": "durable_schedule.tasks.DurableBackend",
    "QUEUES": ["default", "emails"],
    "OPTIONS": {"SCOPE": "demo"},
}
WITH_V2 = {
    "default": DEFAULT,
    "v2": {
        "BACKEND": "durable_schedule.tasks.DurableBackend",
        "OPTIONS": {"SCOPE": "demo", "VERSION": "v2"},
    },
}


@pytest.fixture
def finished():
    seen = []

    def receive(sender, task_result, **kwargs):
        seen.append(task_result)

    signals.task_finished.connect(receive, weak=False)
    yield seen
    signals.task_finished.disconnect(receive)


def test_late_return__task_finished_carries_the_expired_end_the_store_keeps(
        committed_clock, finished):
    result = demo.returns_after_its_deadline.enqueue(5)
    run_pass()
    assert work_row(result.id, "state") == ("expired",)
    stored = demo.returns_after_its_deadline.get_result(result.id)
    assert stored.status == TaskResultStatus.FAILED

    [signalled] = finished
    assert signalled.status == stored.status == TaskResultStatus.FAILED
    assert signalled.errors[-1].exception_class is TaskExpired
    assert stored.errors[-1].exception_class is TaskExpired
    with pytest.raises(ValueError):
        signalled.return_value  # noqa: B018 - no success, so no return value


def test_return_before_the_deadline__task_finished_is_successful(committed_clock, finished):
    result = demo.returns_after_its_deadline.enqueue(-1)  # returns 1 s before the deadline
    run_pass()
    assert work_row(result.id, "state") == ("succeeded",)
    [signalled] = finished
    assert signalled.status == TaskResultStatus.SUCCESSFUL
    assert signalled.return_value == "too late" and signalled.errors == []


def test_unknown_definition__a_suspension_is_not_an_attempt_error(committed_clock):
    with override_settings(TASKS=WITH_V2):
        result = demo.add.using(backend="v2").enqueue(1, 2)
    committed_clock.advance(timedelta(hours=1))
    assert run_pass().suspended == 1  # no backend gives the task v2 any more

    suspended = demo.add.get_result(result.id)
    assert suspended.status == TaskResultStatus.FAILED and suspended.attempts == 0
    # The end entry says why; no attempt error precedes it.
    assert [e.exception_class for e in suspended.errors] == [TaskSuspended]

    work.resume("demo", result.id, actor="ops")
    suspended.refresh()
    assert suspended.status == TaskResultStatus.READY and suspended.attempts == 0
    assert suspended.errors == []

    with override_settings(TASKS=WITH_V2):
        assert run_pass().succeeded == 1
        suspended.refresh()
    assert suspended.status == TaskResultStatus.SUCCESSFUL and suspended.errors == []


def test_return_before_the_deadline_recorded_after_it__task_finished_says_expired(
        committed_clock, finished):
    """A batch records its outcomes together, after its last attempt: the first task returns
    1 s before its deadline, the second then moves the clock past it, and the store records
    the first's outcome late (quarantined, ``expired``). The signal is sent after that record,
    so it says what the store keeps, not SUCCESSFUL."""
    early = demo.returns_after_its_deadline.using(priority=10).enqueue(-1)
    late = demo.returns_after_its_deadline.enqueue(5)
    run_pass(batch=2)
    assert work_row(early.id, "state") == ("expired",)
    assert work_row(late.id, "state") == ("expired",)

    by_id = {r.id: r for r in finished}
    assert set(by_id) == {early.id, late.id}
    stored = demo.returns_after_its_deadline.get_result(early.id)
    assert by_id[early.id].status == stored.status == TaskResultStatus.FAILED
    assert by_id[early.id].errors[-1].exception_class is TaskExpired
    with pytest.raises(ValueError):
        by_id[early.id].return_value  # noqa: B018 - no success, so no return value


def test_failed_attempt__task_finished_error_is_bounded_as_stored(committed_clock, finished):
    """The signal's new error is bounded as the stored one is (8,000 characters): before, it
    carried the whole traceback, here 100,000 characters of message, to every receiver."""
    result = demo.always_fails.enqueue("x" * 100_000)
    run_pass()
    [signalled] = finished
    stored = demo.always_fails.get_result(result.id)
    assert len(stored.errors[-1].traceback) <= 8000
    assert len(signalled.errors[-1].traceback) <= 8000
    assert signalled.errors[-1].exception_class is ValueError


def test_after_record__a_follow_up_that_raises_is_logged_and_the_rest_still_run(caplog):
    """What runs after an outcome is recorded (the deferred task_finished) cannot undo it: a
    follow-up that raises (its read of the stored result failed) is logged, and the follow-ups
    of the other outcomes of the batch still run."""
    from durable_schedule.work.outcome import run_after_record

    ran = []

    def broken():
        raise RuntimeError("the read failed")

    run_after_record([broken, lambda: ran.append("next")])
    assert ran == ["next"]
    assert "an outcome was recorded raised" in caplog.text
