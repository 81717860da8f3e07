"""TASK_OPTIONS values are checked when the backend is built (DS243), as the keys and the
backend-wide defaults are. Before, only the keys were: ``{"version": 5}`` built a backend, and
the task failed at its first enqueue (InvalidTask) long after the settings were read."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.evaluation.policy import ExecutionPolicy, RetryPolicy
from durable_schedule.tasks import DurableBackend

TASK = "demo.tasks.add"


def build(values):
    return DurableBackend(
        "checked",
        {
            "BACKEND": "durable_schedule.tasks.DurableBackend",
            "OPTIONS": {"TASK_OPTIONS": {TASK: values}},
        },
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("version", 5),
        ("version", ""),
        ("safety", "careful"),
        ("policy", {"retry": 3}),
        ("deadline_after", "1h"),
        ("deadline_after", timedelta(0)),
        ("deadline_after", timedelta(seconds=-1)),
    ],
)
def test_task_options__a_bad_value_is_ds243_when_the_backend_is_built(key, value):
    with pytest.raises(InvalidTaskOptions, match="DS243") as caught:
        build({key: value})
    assert key in caught.value.message and TASK in caught.value.message
    assert caught.value.context["got"] == repr(value)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"version": "v2", "safety": "reconcile_before_retry"},
        {
            "safety": "idempotent",
            "policy": ExecutionPolicy(RetryPolicy()),
            "deadline_after": timedelta(1),
        },
        {"version": None, "safety": None, "policy": None, "deadline_after": None},
    ],
)
def test_task_options__good_values_build_the_backend(values):
    assert build(values).options["TASK_OPTIONS"][TASK] == values
