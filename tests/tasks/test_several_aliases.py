"""A task enqueued through another durable alias of ``TASKS`` (``task.using(backend=...)``) runs
at the version that alias gives it (docs/tasks.md "Several backends"). Before, a worker asked
only the task's own backend for its version: Work accepted at the other alias's ``VERSION`` (or
``TASK_OPTIONS`` version) was suspended as unknown_definition in every worker, also in the
process that had just enqueued it, and its result was FAILED without an attempt."""

from __future__ import annotations

import pytest
from demo import tasks as demo
from django.test import override_settings

from durable_schedule.tasks.compat import TaskResultStatus, signals
from tests.work.conftest import history, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULT = {
    "BACKEND": "durable_schedule.tasks.DurableBackend",
    "QUEUES": ["default", "emails"],
    "OPTIONS": {"SCOPE": "demo"},
}


def _aliases(**second_options) -> dict:
    return {
        "default": DEFAULT,
        "second": {
            "BACKEND": "durable_schedule.tasks.DurableBackend",
            "OPTIONS": {"SCOPE": "demo", **second_options},
        },
    }


@pytest.mark.parametrize(
    "second_options",
    [
        {"VERSION": "v2"},
        {"TASK_OPTIONS": {"demo.tasks.add": {"version": "v7"}}},
    ],
    ids=["backend-version", "task-options-version"],
)
def test_using_backend__the_other_aliases_version_runs(committed_clock, second_options):
    with override_settings(TASKS=_aliases(**second_options)):
        on_second = demo.add.using(backend="second")
        result = on_second.enqueue(3, 4)
        expected = second_options.get("VERSION") or "v7"
        assert work_row(result.id, "work_version") == (expected,)
        counts = run_pass()
        assert (counts.succeeded, counts.suspended) == (1, 0)
        assert history(result.id) == ["accepted", "admitted", "succeeded"]
        done = on_second.get_result(result.id)
        assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 7


def test_using_backend__the_run_sees_the_alias_that_accepted_it(committed_clock):
    seen = []

    def started(sender, task_result, **kwargs):
        seen.append((task_result.backend, task_result.task.backend))

    with override_settings(TASKS=_aliases(VERSION="v2")):
        signals.task_started.connect(started, weak=False)
        try:
            demo.add.using(backend="second").enqueue(1, 1)
            assert run_pass().succeeded == 1
        finally:
            signals.task_started.disconnect(started)
    assert seen == [("second", "second")]


def test_using_backend__work_of_a_version_no_alias_gives_is_still_suspended(committed_clock):
    # The other aliases are asked for the Work's version, not taken as a blanket "known".
    with override_settings(TASKS=_aliases(VERSION="v2")):
        result = demo.add.using(backend="second").enqueue(1, 1)
    # Neither alias gives the task v2 any more (the second one is gone from the settings).
    with override_settings(TASKS={"default": DEFAULT}):
        counts = run_pass()
    assert (counts.succeeded, counts.suspended) == (0, 1)
    assert work_row(result.id, "state", "suspension_reason") == ("suspended", "unknown_definition")


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_using_backend__the_run_is_read_through_the_workers_database(committed_clock):
    """Two aliases that give the task the same version, on two databases: the worker of the
    second database runs the Work with the backend on that database, and reads its result
    there. Before, the task's own backend (another database) was taken because it was asked
    first: with two real databases the run's result was read where the Work is not, and every
    attempt failed with LookupError."""
    seen = []

    def started(sender, task_result, **kwargs):
        seen.append(task_result.backend)

    on_other = {"default": DEFAULT,
                "second": {"BACKEND": "durable_schedule.tasks.DurableBackend",
                           "OPTIONS": {"SCOPE": "demo", "DATABASE": "other"}}}
    with override_settings(TASKS=on_other):
        signals.task_started.connect(started, weak=False)
        try:
            result = demo.add.using(backend="second").enqueue(2, 2)
            assert run_pass(using="other").succeeded == 1
        finally:
            signals.task_started.disconnect(started)
        assert demo.add.using(backend="second").get_result(result.id).return_value == 4
    assert seen == ["second"]
