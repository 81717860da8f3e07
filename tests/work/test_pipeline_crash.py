"""Issue 16 tests: kill -9 in the middle of a Work batch loses nothing and duplicates nothing.

The worker is a real ``process_work`` process admitting a batch of five in one transaction. It
stalls after each effect, before the group commit (the stall barrier at
``work-effect-before-outcome``); the test SIGKILLs it during the third stall: three effects
happened, two admitted attempts never started, and no outcome was committed -- nothing the
worker acknowledged lived only in its memory. After the attempt leases expire (controlled
clock) a fresh worker recovers: every Work ends ``succeeded`` exactly once (one succeeded
permit each), the idempotent effects of the three lost attempts are repeated as their promise
allows, and the two that never ran run once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from demo.models import Effect

from durable_schedule import work
from durable_schedule.barriers import WORK_EFFECT_BEFORE_OUTCOME
from tests.conftest import database_url
from tests.work.conftest import MIN, permits, rows

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_SCHEDULE_")}
    env.update(DATABASE_URL=database_url(), PYTHONUNBUFFERED="1", **extra)
    return env


def test_pipeline_crash__kill_9_mid_batch_loses_and_duplicates_nothing(committed_clock):
    work.autodiscover()
    touch = work.lookup("demo.touch", "v1")
    ids = [touch.enqueue(scope="tenant-a", command=f"c-{i}", idempotency_key=f"k-{i}",
                         payload={}).work_id for i in range(5)]
    proc = subprocess.Popen(
        [sys.executable, "testproject/manage.py", "process_work", "--lease-owner", "doomed",
         "--batch", "5", "--max-items", "5"],
        cwd=ROOT, env=_env(DURABLE_SCHEDULE_STALL_AT=f"{WORK_EFFECT_BEFORE_OUTCOME}=5"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stalls = 0
        seen = []
        for line in proc.stderr:  # bounded: the worker stalls 5 s per effect
            seen.append(line)
            if "stall barrier" in line:
                stalls += 1
                if stalls == 3:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    # Mid-batch: all five admitted in one transaction, three effects, no outcome committed.
    assert rows("select state, count(*) from durable_work group by state") == [("running", 5)]
    assert Effect.objects.count() == 3, seen
    assert rows("select count(*) from durable_work_permit where outcome is null") == [(5,)]

    committed_clock.advance(MIN)  # the dead worker's attempt leases expire
    done = subprocess.run(
        [sys.executable, "testproject/manage.py", "process_work", "--max-items", "50"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    committed_clock.advance(timedelta(seconds=10))  # the legacy backoff after a lost attempt
    done = subprocess.run(
        [sys.executable, "testproject/manage.py", "process_work", "--max-items", "50"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]

    assert rows("select count(*) from durable_work") == [(5,)]  # nothing lost, none added
    assert rows("select state, count(*) from durable_work group by state") == [
        ("succeeded", 5)]
    effects = sorted(Effect.objects.filter(work_id=i).count() for i in ids)
    assert effects == [1, 1, 2, 2, 2]  # the three lost attempts repeated, as idempotent allows
    for work_id in ids:
        outcomes = [p[2] for p in permits(work_id)]
        assert outcomes == [None, "succeeded"], outcomes  # exactly one success each
