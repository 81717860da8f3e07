"""A task is refused (InvalidTask) unless a worker can find it by its module path: a function
decorated with ``@task`` inside a class body passes Django's module-level check (its qualname has
no ``<locals>``), but its module path (``app.tasks.Holder.run``) names no module attribute, so a
worker never resolves it. Before, such a task was accepted by ``enqueue()``; its Work was then
suspended (unknown_definition) by every worker, the enqueuing process included, and its result
ended FAILED without an attempt ever running (docs/tasks.md "Capabilities")."""

from __future__ import annotations

import importlib
import sys

import demo
import pytest
from demo import tasks as demo_tasks

from durable_schedule.store.models import Work
from durable_schedule.tasks.compat import InvalidTask

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "demo.module_path_probe"
HEADER = """
try:
    from django.tasks import task
except ImportError:
    from django_tasks import task
"""
IN_A_CLASS = (
    HEADER
    + """
class Holder:
    @task
    def run(n):
        return n
"""
)
AT_MODULE_LEVEL = (
    HEADER
    + """
@task
def run(n):
    return n
"""
)


@pytest.fixture
def write_module(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "__path__", [*demo.__path__, str(tmp_path)])

    def write(source):
        (tmp_path / "module_path_probe.py").write_text(source)
        sys.modules.pop(MODULE, None)
        importlib.invalidate_caches()
        return importlib.import_module(MODULE)

    yield write
    sys.modules.pop(MODULE, None)


def test_validate_task__a_task_in_a_class_body_is_invalid(committed_clock, write_module):
    with pytest.raises(InvalidTask, match="module path") as caught:
        write_module(IN_A_CLASS)
    assert "demo.module_path_probe.Holder.run" in str(caught.value)
    assert not Work.objects.exists()


def test_validate_task__a_module_level_task_of_the_same_module_is_valid(
    committed_clock, write_module
):
    module = write_module(AT_MODULE_LEVEL)
    result = module.run.enqueue(5)
    assert module.run.get_result(result.id).args == [5]
    assert demo_tasks.add.using(priority=1).priority == 1


REBOUND = (
    HEADER
    + """
def _send(n):
    return n


send = task(_send)
"""
)


def test_enqueue__a_task_bound_under_another_name_is_invalid(committed_clock, write_module):
    # Before: enqueue() accepted it; its module path (demo.module_path_probe._send) names the
    # plain function, not the task, so every worker suspended the Work (unknown_definition).
    module = write_module(REBOUND)
    with pytest.raises(InvalidTask, match="module path") as caught:
        module.send.enqueue(1)
    assert "demo.module_path_probe._send" in str(caught.value)
    assert not Work.objects.exists()
    from durable_schedule import tasks

    with pytest.raises(InvalidTask, match="module path"):
        tasks.target(module.send, 1)


ON_ANOTHER_BACKEND = (
    HEADER
    + """
@task(backend="plain")
def run(n):
    return n
"""
)


def test_enqueue__a_task_of_a_non_durable_backend_moved_by_using_is_invalid(
    committed_clock, write_module
):
    # Before: accepted; a worker accepts only a module-level task of a durable backend, so the
    # Work was suspended (unknown_definition) everywhere.
    from django.test import override_settings

    from durable_schedule.tasks.compat import FRAMEWORK

    dummy = f"{FRAMEWORK}.backends.dummy.DummyBackend"
    both = {
        "default": {
            "BACKEND": "durable_schedule.tasks.DurableBackend",
            "OPTIONS": {"SCOPE": "demo"},
        },
        "plain": {"BACKEND": dummy},
    }
    with override_settings(TASKS=both):
        module = write_module(ON_ANOTHER_BACKEND)
        with pytest.raises(InvalidTask, match="module path"):
            module.run.using(backend="default").enqueue(1)
    assert not Work.objects.exists()


def test_validate_task__a_module_path_longer_than_a_work_name_is_invalid(committed_clock,
                                                                         write_module):
    """The module path is the Work name (1-200 characters, DS115): a longer one passed
    ``@task`` and failed every enqueue with InvalidIdentifier instead of InvalidTask."""
    name = "r" * (201 - len(MODULE) - 1)
    with pytest.raises(InvalidTask, match="Work name"):
        write_module(AT_MODULE_LEVEL.replace("def run(", f"def {name}("))
    assert not Work.objects.exists()
