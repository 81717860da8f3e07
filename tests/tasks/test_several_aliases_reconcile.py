"""The reconciler of a ``reconcile_before_retry`` task enqueued through another durable alias
(``task.using(backend=...)``) sees the result as that alias holds it, as the task's run does
(docs/tasks.md "Several backends"). Before, the reconciler always read and named the task's own
backend: ``context.task_result.backend`` said "default" for Work the "second" alias accepted
(and its ``refresh()`` asked that backend)."""

from __future__ import annotations

import importlib
import sys
from datetime import timedelta

import demo
import pytest
from django.test import override_settings

from durable_schedule.work import registry
from tests.work.conftest import history, run_pass

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "demo.several_aliases_reconcile"
SOURCE = """
try:
    from django.tasks import task
except ImportError:
    from django_tasks import task
from durable_schedule import tasks, work

SEEN = []


@tasks.options(safety="reconcile_before_retry")
@task
def charge(n):
    raise SystemExit(3)  # the worker stops: the attempt is recovered after its lease


@tasks.reconciler(charge)
def charge_happened(context, n):
    SEEN.append((context.task_result.backend, context.task_result.task.backend))
    return work.Applied({"charged": n})
"""

ALIASES = {
    "default": {
        "BACKEND": "durable_schedule.tasks.DurableBackend",
        "QUEUES": ["default", "emails"],
        "OPTIONS": {"SCOPE": "demo"},
    },
    "second": {
        "BACKEND": "durable_schedule.tasks.DurableBackend",
        "OPTIONS": {"SCOPE": "demo", "VERSION": "v2"},
    },
}


@pytest.fixture
def module(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "__path__", [*demo.__path__, str(tmp_path)])
    (tmp_path / "several_aliases_reconcile.py").write_text(SOURCE)
    importlib.invalidate_caches()
    yield importlib.import_module(MODULE)
    sys.modules.pop(MODULE, None)


def test_reconcile__the_reconciler_sees_the_alias_that_accepted_it(committed_clock, module):
    with override_settings(TASKS=ALIASES):
        result = module.charge.using(backend="second").enqueue(5)
        # A worker that never enqueued it: it finds the definition by name and version.
        registry._unregister(MODULE + ".charge", "v2")
        with pytest.raises(SystemExit):
            run_pass()
        committed_clock.advance(timedelta(hours=2))  # past the lost attempt's lease
        run_pass()
        assert history(result.id) == ["accepted", "admitted", "reconciling", "reconciled_applied"]
        assert module.SEEN == [("second", "second")]
        done = module.charge.using(backend="second").get_result(result.id)
        assert done.return_value == {"charged": 5}
