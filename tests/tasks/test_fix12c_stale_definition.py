"""A task whose code is gone from a process that still has its definition registered (the
process enqueued it, or ran its Work before) is treated as unknown there too: the Work is
suspended (unknown_definition), exactly as in a worker that never registered it (docs/tasks.md
"Workers", docs/work.md "States"). Before, that process admitted every attempt and failed it
with LookupError, retried under the policy until the attempts ran out."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import uuid

import demo
import pytest
from demo import tasks as demo_tasks

from durable_schedule import work
from durable_schedule.store.models import Work
from durable_schedule.tasks.compat import TaskResultStatus
from durable_schedule.work import registry
from tests.conftest import database_url
from tests.tasks.conftest import SCOPE, run_pass
from tests.work.test_crash import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

MODULE = "demo.fix12c_stale"
NAME = MODULE + ".billing"
GOOD = """
try:
    from django.tasks import task
except ImportError:
    from django_tasks import task
@task
def billing(n):
    return n + 1
"""
#: The deploys that take the task away from a process that already imported it.
DEPLOYS = {
    "renamed": GOOD.replace("def billing(", "def invoicing("),
    "removed": GOOD.split("@task")[0],
    "raises_on_import": GOOD + "\nraise RuntimeError('settings for this module are missing')\n",
}


@pytest.fixture
def stale(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "__path__", [*demo.__path__, str(tmp_path)])
    path = tmp_path / "fix12c_stale.py"
    path.write_text(GOOD)
    importlib.invalidate_caches()
    module = importlib.import_module(MODULE)

    def deploy(source: str, *, fresh_worker: bool) -> None:
        path.write_text(source)
        sys.modules.pop(MODULE, None)
        importlib.invalidate_caches()
        if fresh_worker:
            registry._unregister(NAME, "v1")  # a worker process that never registered it

    yield module, deploy
    sys.modules.pop(MODULE, None)
    registry._unregister(NAME, "v1")


def outcome(work_id: str) -> tuple:
    row = Work.objects.get(work_id=uuid.UUID(work_id))
    return row.state, row.suspension_reason, row.attempt, (row.last_error or {}).get("code")


@pytest.mark.parametrize("change", sorted(DEPLOYS))
@pytest.mark.parametrize("worker", ["enqueuing_process", "fresh_worker"])
def test_a_task_gone_since_it_was_registered_is_suspended_as_in_a_fresh_worker(
    stale, committed_clock, change, worker
):
    # Before the fix, in the enqueuing process: ("pending", None, 1, ...) -- the attempt was
    # admitted and failed with LookupError ("can no longer be imported"), to be retried.
    module, deploy = stale
    gone = module.billing.enqueue(1)
    healthy = demo_tasks.add.enqueue(2, 3)
    deploy(DEPLOYS[change], fresh_worker=worker == "fresh_worker")
    counts = run_pass(max_items=5)
    assert counts.succeeded == 1
    assert outcome(gone.id) == ("suspended", "unknown_definition", 0, "DS201")
    assert demo_tasks.add.get_result(healthy.id).return_value == 5
    # Once the task is back (fixed deploy), resuming the Work runs it: nothing was consumed.
    deploy(GOOD, fresh_worker=False)

    work.resume(SCOPE, uuid.UUID(gone.id), actor="operator")
    run_pass(max_items=5)
    back = importlib.import_module(MODULE).billing.get_result(gone.id)
    assert back.status == TaskResultStatus.SUCCESSFUL and back.return_value == 2


@pytest.mark.parametrize("worker", ["enqueuing_process", "fresh_worker"])
def test_work_of_a_version_the_task_no_longer_has_is_suspended_as_in_a_fresh_worker(
    committed_clock, monkeypatch, worker
):
    # Options changed since the Work was accepted: the task now runs at v2. A fresh worker
    # suspends the v1 Work (never reinterpreted); before the fix the enqueuing process, whose
    # registry still held v1, ran it with the v2 code.
    old = demo_tasks.add.enqueue(1, 2)
    backend = demo_tasks.add.get_backend()
    monkeypatch.setitem(
        backend.options, "TASK_OPTIONS", {demo_tasks.add.module_path: {"version": "v2"}}
    )
    if worker == "fresh_worker":
        registry._unregister(demo_tasks.add.module_path, "v1")
    run_pass(max_items=5)
    assert outcome(old.id) == ("suspended", "unknown_definition", 0, "DS201")


def test_the_enqueuing_process_and_a_separate_worker_process_decide_alike(stale, committed_clock):
    # Two real processes: a `manage.py process_work` subprocess, which never imported the task,
    # and this process, which enqueued it. Before the fix the subprocess suspended its Work and
    # this process admitted its own and failed it with LookupError (pending, attempt 1).
    module, deploy = stale
    ids = [module.billing.enqueue(n).id for n in (1, 2)]
    deploy(DEPLOYS["removed"], fresh_worker=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_SCHEDULE_CRASH")}
    env["DATABASE_URL"] = database_url()
    done = subprocess.run(
        [
            sys.executable,
            "testproject/manage.py",
            "process_work",
            "--lease-owner",
            "subprocess",
            "--max-items",
            "1",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    by_subprocess = [i for i in ids if outcome(i)[0] == "suspended"]
    assert len(by_subprocess) == 1  # the other is still pending, for this process
    run_pass(max_items=5)
    (by_this_process,) = set(ids) - set(by_subprocess)
    assert outcome(by_this_process) == outcome(by_subprocess[0])
    assert outcome(by_this_process) == ("suspended", "unknown_definition", 0, "DS201")
