"""Arguments that do not fit the task function's signature are refused at ``enqueue`` (and by
``tasks.target()``) with DS271, a ``TypeError``, before anything is written (docs/tasks.md
"Arguments and return values"). Before, ``add.enqueue(1)`` was accepted, and every attempt
failed with ``TypeError: add() missing 1 required positional argument`` until the retry
policy gave up; a schedule targeting such a call failed every run, forever."""

from __future__ import annotations

import pytest
from demo import tasks as demo

from durable_schedule import tasks
from durable_schedule.errors import TaskArgumentsMismatch
from durable_schedule.store.models import Work

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("task", "args", "kwargs", "said"),
    [
        (demo.add, (1,), {}, "missing a required argument: 'b'"),
        (demo.add, (1, 2, 3), {}, "too many positional arguments"),
        (demo.add, (1, 2), {"c": 3}, "unexpected keyword argument 'c'"),
        (demo.add, (1, 2), {"a": 2}, "multiple values for argument 'a'"),
        (demo.send_welcome, (7, "hello"), {}, "too many positional arguments"),
        (demo.record, (), {}, "missing a required argument: 'key'"),  # context comes first
    ],
)
def test_enqueue__arguments_that_do_not_fit_the_signature_are_ds271(
        committed_clock, task, args, kwargs, said):
    with pytest.raises(TaskArgumentsMismatch, match="DS271") as caught:
        task.enqueue(*args, **kwargs)
    assert isinstance(caught.value, TypeError)
    assert said in caught.value.message and task.module_path in caught.value.message
    with pytest.raises(TaskArgumentsMismatch, match="DS271"):
        tasks.target(task, *args, **kwargs)
    assert Work.objects.count() == 0


def test_enqueue__arguments_that_fit_are_accepted(committed_clock):
    demo.add.enqueue(1, b=2)
    demo.send_welcome.enqueue(7, template="hello")
    demo.record.enqueue("k")
    assert Work.objects.count() == 3


def test_fit__checks_the_callable_the_worker_calls_not_the_function_it_wraps():
    import functools
    from types import SimpleNamespace

    from durable_schedule.tasks import arguments

    def fetch(client, url):
        return client, url

    @functools.wraps(fetch)
    def with_client(*args, **kwargs):  # supplies ``client`` itself
        return fetch("client", *args, **kwargs)

    wrapped = SimpleNamespace(func=with_client, takes_context=False,
                              module_path="demo.tasks.fetch")
    arguments.fit(wrapped, ("https://example.org",), {})  # what the worker's call accepts
    plain = SimpleNamespace(func=fetch, takes_context=False, module_path="demo.tasks.fetch")
    with pytest.raises(TaskArgumentsMismatch, match="DS271"):
        arguments.fit(plain, ("https://example.org",), {})
