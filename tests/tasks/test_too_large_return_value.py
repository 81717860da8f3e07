"""A task whose return value is larger than the store holds (``codec.MAX_JSON_BYTES``, DS250,
docs/work.md "Accepting Work") fails its attempt, and ``task_finished`` says so: FAILED with the
size error, as the stored result shows (docs/tasks.md "Signals": the signal carries that
attempt's outcome). The signal said SUCCESSFUL with the value, and then the runtime failed the
attempt and retried it, so a receiver recorded a success that never happened."""

from __future__ import annotations

import pytest
from demo import tasks as demo

from durable_schedule.tasks.compat import TaskResultStatus, signals
from durable_schedule.work import codec
from tests.tasks.conftest import run_pass

pytestmark = pytest.mark.django_db(transaction=True)


def test_too_large_return_value__task_finished_reports_the_failed_attempt(
        committed_clock, monkeypatch):
    finished = []

    def receive(sender, task_result, **kwargs):
        finished.append(task_result)

    result = demo.add.enqueue("x" * 600, "y" * 600)  # returns 1,200 characters
    monkeypatch.setattr(codec, "MAX_JSON_BYTES", 1000)
    signals.task_finished.connect(receive, weak=False)
    try:
        run_pass()
    finally:
        signals.task_finished.disconnect(receive)
    stored = demo.add.get_result(result.id)
    assert stored.status == TaskResultStatus.READY  # the attempt failed; retried by policy
    assert [e.exception_class_path for e in stored.errors] == [
        "durable_schedule.errors.PayloadTooLarge"]
    assert len(finished) == 1
    signalled = finished[0]
    assert signalled.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in signalled.errors] == [
        "durable_schedule.errors.PayloadTooLarge"]
    assert "DS250" in signalled.errors[-1].traceback
