"""A FAILED result is finished (``is_finished``), so it has a ``finished_at``, as every result
Django's backends report as FAILED does (docs/tasks.md "Status mapping"). Suspended Work is
projected as FAILED but the Work row keeps no finished_at (an operator may resume it): before,
its result said FAILED and is_finished with ``finished_at`` None, so ``finished_at -
enqueued_at`` raised TypeError. Now it is the instant the Work was suspended, and None again
once the Work is resumed (READY)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import tasks as demo
from django.test import override_settings

from durable_schedule import work
from durable_schedule.tasks.compat import TaskResultStatus
from tests.conftest import T0
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


def test_suspended__the_failed_result_has_the_suspension_instant(committed_clock):
    with override_settings(TASKS=WITH_V2):
        result = demo.add.using(backend="v2").enqueue(1, 2)
    committed_clock.advance(timedelta(hours=1))
    # No backend gives the task v2 any more: the worker suspends it (unknown_definition).
    assert run_pass().suspended == 1
    assert work_row(result.id, "state", "finished_at") == ("suspended", None)
    failed = demo.add.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED and failed.is_finished
    assert failed.finished_at == T0 + timedelta(hours=1)
    assert failed.finished_at - failed.enqueued_at == timedelta(hours=1)

    work.resume("demo", result.id, actor="ops")
    failed.refresh()
    assert failed.status == TaskResultStatus.READY and failed.finished_at is None
