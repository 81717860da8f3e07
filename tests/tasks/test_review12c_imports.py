"""A task module that raises while a worker imports it (a RuntimeError, not ImportError) is a
task the worker does not know: its Work is suspended (unknown_definition) and every other Work
still runs; get_result() answers TaskResultDoesNotExist while the module does not import."""

from __future__ import annotations

import importlib
import sys
import uuid

import demo
import pytest
from demo import tasks as demo_tasks

from durable_schedule.store.models import Work
from durable_schedule.tasks.compat import TaskResultDoesNotExist
from durable_schedule.work import registry
from tests.tasks.conftest import run_pass

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "demo.review12c_fragile"
GOOD = """
try:
    from django.tasks import task
except ImportError:
    from django_tasks import task
@task
def fragile(n):
    return n + 1
"""
BROKEN = GOOD + "\nraise RuntimeError('settings for this module are missing')\n"


@pytest.fixture
def fragile(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "__path__", [*demo.__path__, str(tmp_path)])
    path = tmp_path / "review12c_fragile.py"
    path.write_text(GOOD)
    importlib.invalidate_caches()
    module = importlib.import_module(MODULE)

    def break_it():
        # A deploy in which the worker's copy of the module raises while it is imported.
        path.write_text(BROKEN)
        sys.modules.pop(MODULE, None)
        importlib.invalidate_caches()
        registry._unregister(MODULE + ".fragile", "v1")  # a worker that never imported it

    yield module, break_it
    sys.modules.pop(MODULE, None)


def test_worker__a_task_module_that_raises_on_import_suspends_only_its_work(
    fragile, committed_clock, caplog
):
    # Before the fix the import's RuntimeError escaped the claim (registry.lookup): the pass
    # raised, and so did every later pass, so demo.add below never ran.
    module, break_it = fragile
    broken = module.fragile.enqueue(1)
    healthy = demo_tasks.add.enqueue(2, 3)
    break_it()
    counts = run_pass(max_items=5)
    assert counts.succeeded == 1
    states = dict(Work.objects.values_list("work_id", "state"))
    assert states == {uuid.UUID(healthy.id): "succeeded", uuid.UUID(broken.id): "suspended"}
    assert demo_tasks.add.get_result(healthy.id).return_value == 5
    assert any(
        "could not be imported" in r.getMessage() and MODULE in r.getMessage()
        for r in caplog.records
    )
    # Its result is not readable while the module does not import: not a leaked RuntimeError.
    with pytest.raises(TaskResultDoesNotExist):
        module.fragile.get_result(broken.id)


@pytest.mark.parametrize(
    "options",
    [{"version": 5}, {"safety": "careful"}, {"deadline_after": "1h"}],
)
def test_worker__task_options_a_deploy_broke_suspend_only_that_tasks_work(
    committed_clock, monkeypatch, caplog, options
):
    # The Work was accepted under good options; the worker's backend then holds options it
    # refuses when it resolves them (the backend checks TASK_OPTIONS when built, so only options
    # changed after that get here). Before the fix that InvalidTask escaped the claim: the pass
    # raised and nothing ran.
    stranded = demo_tasks.add.enqueue(1, 2)
    healthy = demo_tasks.send_welcome.enqueue(7)
    backend = demo_tasks.add.get_backend()
    monkeypatch.setitem(backend.options, "TASK_OPTIONS", {demo_tasks.add.module_path: options})
    registry._unregister(demo_tasks.add.module_path, "v1")  # a worker that never enqueued it
    counts = run_pass(max_items=5, queues=["default", "emails"])
    assert counts.succeeded == 1
    states = dict(Work.objects.values_list("work_id", "state"))
    assert states == {uuid.UUID(healthy.id): "succeeded", uuid.UUID(stranded.id): "suspended"}
    assert any(
        "options" in r.getMessage() and demo_tasks.add.module_path in r.getMessage()
        for r in caplog.records
    )
