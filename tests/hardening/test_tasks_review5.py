"""The tasks backend's enqueue arguments (docs/tasks.md "Arguments"): every value that is not
JSON the store can hold is refused at enqueue with a DS-coded error naming where it is, and
nothing is accepted."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest
from demo import tasks as demo

from durable_schedule.errors import DurableError, WorkArithmeticOutOfRange
from durable_schedule.store.models import Work
from durable_schedule.tasks.compat import InvalidTask

pytestmark = pytest.mark.django_db(transaction=True)


def _nested(depth: int) -> list:
    # What json.loads gives for a request body of ``depth`` nested brackets: a value a caller
    # may well pass on unchecked.
    return json.loads("[" * depth + "]" * depth)


@pytest.mark.parametrize("depth", [65, 900])
def test_enqueue__deeply_nested_arguments_are_a_ds_error_not_a_recursion_error(committed_clock,
                                                                              depth):
    for args, kwargs in (((_nested(depth), 1), {}), ((7,), {"template": {"x": _nested(depth)}})):
        task = demo.add if not kwargs else demo.send_welcome
        with pytest.raises(DurableError) as caught:
            task.enqueue(*args, **kwargs)
        assert caught.value.code in ("DS241", "DS209")
    assert Work.objects.count() == 0


def test_enqueue__a_deadline_after_past_the_supported_range_is_ds215(committed_clock):
    far = dataclasses.replace(demo.add, deadline_after=timedelta.max)
    with pytest.raises(WorkArithmeticOutOfRange, match="DS215"):
        far.enqueue(1, 2)
    assert Work.objects.count() == 0


@pytest.mark.parametrize("changes", [
    {"run_after": timedelta(minutes=5)}, {"run_after": "2030-01-01T00:00:00Z"},
    {"priority": "1"}, {"priority": True}])
def test_using__a_wrongly_typed_run_after_or_priority_is_invalid_task(changes):
    with pytest.raises(InvalidTask):
        demo.add.using(**changes)


@pytest.mark.parametrize("name, version", [(5, "v1"), ("demo.tasks.add", None), (None, None)])
def test_lookup__names_that_are_not_text_are_ds406_not_attribute_error(name, version):
    # The tasks backend resolves Work names to tasks, so its resolver sees every lookup.
    from durable_schedule import work

    with pytest.raises(DurableError) as caught:
        work.lookup(name, version)
    assert caught.value.code == "DS406"


@pytest.mark.parametrize("options", [
    {"TASK_OPTIONS": {"demo.tasks.charge": {"safty": "reconcile_before_retry"}}},
    {"TASK_OPTIONS": {"demo.tasks.add": "idempotent"}},
    {"SAFETY": "at_most_once"}, {"VERSION": 2}, {"DEADLINE_AFTER": "5m"}, {"POLICY": "retry"}])
def test_backend__bad_options_are_ds243_when_the_backend_is_built(options):
    # A misspelt per-task key used to be ignored: the task ran with the default safety
    # (idempotent), so a reconcile_before_retry effect would be retried blindly.
    from durable_schedule.errors import InvalidTaskOptions
    from durable_schedule.tasks import DurableBackend

    with pytest.raises(InvalidTaskOptions, match="DS243"):
        DurableBackend("checked", {"BACKEND": "durable_schedule.tasks.DurableBackend",
                                   "OPTIONS": options})
