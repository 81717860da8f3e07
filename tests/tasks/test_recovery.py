"""Tasks under real process kills and concurrent workers (issue 15 "Tests"): the case other
database backends leave in limbo. Workers are ``manage.py process_work`` subprocesses; each
resolves the task by module path in its own process (durable_schedule/tasks/definitions.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest
from demo import tasks as demo
from demo.models import Effect

from durable_schedule.barriers import WORK_EFFECT_BEFORE_OUTCOME
from durable_schedule.tasks.compat import TaskResultStatus
from tests.conftest import T0, database_url
from tests.work.conftest import MIN, run_pass
from tests.work.test_crash import ROOT, worker

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]


def effects(result_id) -> int:
    return Effect.objects.filter(work_id=result_id).count()


def test_kill__a_worker_killed_mid_task_is_recovered_and_the_task_runs_again(committed_clock):
    result = demo.record.enqueue("killed")
    worker(WORK_EFFECT_BEFORE_OUTCOME)  # dies after the effect, before the outcome
    assert effects(result.id) == 1
    assert demo.record.get_result(result.id).status == TaskResultStatus.RUNNING
    committed_clock.advance(MIN)  # the dead worker's lease expires
    assert run_pass().recovered == 1
    committed_clock.advance(MIN)
    assert run_pass().succeeded == 1
    done = demo.record.get_result(result.id)
    # idempotent (the default safety): repeated once, as that promise allows
    assert done.status == TaskResultStatus.SUCCESSFUL and effects(result.id) == 2
    assert done.worker_ids == ["subprocess", "test-worker"] and done.return_value == 2


def test_kill__a_reconcile_before_retry_task_is_not_repeated(committed_clock):
    result = demo.charge.enqueue(42, 1999)
    worker(WORK_EFFECT_BEFORE_OUTCOME)
    assert effects(result.id) == 1
    committed_clock.set(T0 + 5 * MIN)
    out = worker().stdout  # a fresh worker process reconciles first
    assert "reconciled=1" in out
    done = demo.charge.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == {"charged": 1999}
    assert effects(result.id) == 1


def test_four_workers__never_run_one_task_twice(committed_clock):
    results = [demo.record.enqueue(f"k{i}") for i in range(120)]
    env = dict(os.environ, DATABASE_URL=database_url())
    env.pop("DURABLE_SCHEDULE_CRASH_AT", None)
    procs = [subprocess.Popen(
        [sys.executable, "testproject/manage.py", "process_work", "--lease-owner", f"w{n}",
         "--max-items", "120"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for n in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    per_task = Counter(str(e.work_id) for e in Effect.objects.all())
    assert sorted(per_task) == sorted(r.id for r in results)
    assert set(per_task.values()) == {1}
    statuses = {demo.record.get_result(r.id).status for r in results}
    assert statuses == {TaskResultStatus.SUCCESSFUL}
