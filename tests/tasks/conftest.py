"""Fixtures of the tasks-backend tests: the demo app's tasks (testproject/demo/tasks.py) on the
durable backend configured in testproject/testproject/settings.py (scope "demo"), a worker pass, and
recorders for Django's task signals."""

from __future__ import annotations

import pytest

from durable_schedule.tasks.compat import signals
from tests.work.conftest import run_pass  # noqa: F401 -- re-exported for the tests

SCOPE = "demo"


@pytest.fixture
def signalled():
    """Every task signal sent while the test runs, as (signal name, status, result id)."""
    seen: list[tuple[str, str, str]] = []
    receivers = {}
    for name in ("task_enqueued", "task_started", "task_finished"):
        def receive(sender, task_result, _name=name, **kwargs):
            seen.append((_name, str(task_result.status), task_result.id))
        receivers[name] = receive
        getattr(signals, name).connect(receive, weak=False)
    yield seen
    for name, receive in receivers.items():
        getattr(signals, name).disconnect(receive)
