"""A held schedule (DS244: its target queue is not in DURABLE_SCHEDULE['QUEUES']) with real
processes: ``process_schedules --loop`` keeps running and serving the other schedules instead
of exiting after the pass (a crash loop under a supervisor), and the one-shot command exits 0
and names it. The subprocesses list only the queue "default" (``DURABLE_QUEUES``); the held
schedule's target names "reports", accepted by this test process, which lists every queue."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from tests.conftest import T0, database_url
from tests.runner.loophelpers import ROOT, sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SCOPE = "tenant-a"
HOUR = timedelta(hours=1)
LEASE = timedelta(seconds=30)  # DURABLE_SCHEDULE['LEASE_SECONDS'] of the test project
NARROW = {"DURABLE_QUEUES": "default"}


@pytest.fixture
def held_and_good(committed_clock):
    schedules.create(SCOPE, "held", schedules.Every(HOUR),
                     schedule_targets.report.target(payload={"report": "r"}, queue="reports"))
    schedules.create(SCOPE, "good", schedules.Every(HOUR),
                     schedule_targets.report.target(payload={"report": "g"}),
                     overlap="allow_all")
    committed_clock.set(T0 + HOUR)
    return committed_clock


def held_due() -> list:
    return sql("select d.due_at from durable_schedule_dispatch d where d.schedule_id = 'held'"
               " and d.lease_owner is null")


def works_of(schedule_id: str) -> int:
    return sql("select count(*) from durable_schedule_occurrence where schedule_id = %s"
               " and work_id is not null", (schedule_id,))[0][0]


def test_loop__keeps_running_past_a_held_schedule_and_serves_the_others(held_and_good):
    clock = held_and_good
    proc = start_loop("process_schedules", env=NARROW)
    try:
        wait_until(lambda: works_of("good") == 1, what="Work of the good schedule")
        wait_until(lambda: held_due() == [(T0 + HOUR + LEASE,)],
                   what="the held schedule to be looked at and put back")
        # Looked at again after the lease duration: held again, and the loop still runs.
        clock.set(T0 + HOUR + LEASE)
        sql("update durable_schedule_dispatch set due_at = due_at where schedule_id = 'held'")
        wait_until(lambda: held_due() == [(T0 + HOUR + 2 * LEASE,)],
                   what="the second look at the held schedule")
        # The good schedule's next instant still runs.
        clock.set(T0 + 2 * HOUR)
        sql("update durable_schedule_dispatch set due_at = due_at where schedule_id = 'good'")
        wait_until(lambda: works_of("good") == 2, what="the good schedule's second Work")
        assert proc.poll() is None, "the loop exited"
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert "schedule tenant-a/held held: its target queue 'reports'" in out, out
    assert "held=1" in out
    assert works_of("held") == 0
    assert sql("select state from durable_schedule_definition where schedule_id = 'held'") \
        == [("active",)]


def test_one_shot__exits_zero_and_names_the_held_schedule_on_stderr(held_and_good):
    done = subprocess.run(
        [sys.executable, "testproject/manage.py", "process_schedules"],
        cwd=ROOT, env={"DATABASE_URL": database_url(), "PATH": "/usr/bin:/bin", **NARROW},
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "materialized=1" in done.stdout and "held=1" in done.stdout
    assert "1 held: tenant-a/held" in done.stderr and "DS244" in done.stderr
    assert works_of("good") == 1 and works_of("held") == 0
