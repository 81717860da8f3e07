"""Real processes for the crash suite: ``manage.py process_schedules`` / ``process_work`` run as
subprocesses against the test database, optionally armed at a named barrier.

A subprocess is told where to die through ``DURABLE_SCHEDULE_CRASH_AT`` (read once, at import of
``durable_schedule.barriers``) and dies with ``os._exit(86)``: no ``finally``, no rollback, no
atexit; PostgreSQL sees the connection drop and rolls back whatever was open. Each subprocess
gets its own ``application_name`` (libpq's ``PGAPPNAME``) so a test can find its backends in
``pg_stat_activity`` and terminate them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from durable_schedule import barriers
from tests.conftest import database_url

ROOT = Path(__file__).resolve().parents[2]
MANAGE = ROOT / "testproject" / "manage.py"

SCHEDULES = "process_schedules"
WORK = "process_work"

#: Which command reaches which barrier, and where (the table of docs/reliability.md).
BARRIER_COMMAND = {
    barriers.SCHEDULE_DECISION_BEFORE_COMMIT: SCHEDULES,
    barriers.SCHEDULE_DECISION_AFTER_COMMIT: SCHEDULES,
    barriers.SCHEDULE_BRIDGE_BEFORE_COMMIT: SCHEDULES,
    barriers.SCHEDULE_LINK_AFTER_COMMIT: SCHEDULES,
    barriers.SCHEDULE_WORK_AFTER_ACCEPTANCE: SCHEDULES,
    barriers.WORK_PERMIT_AFTER_COMMIT: WORK,
    barriers.WORK_EFFECT_BEFORE_OUTCOME: WORK,
}
SCHEDULE_BARRIERS = tuple(sorted(b for b, c in BARRIER_COMMAND.items() if c == SCHEDULES))
WORK_BARRIERS = tuple(sorted(b for b, c in BARRIER_COMMAND.items() if c == WORK))

#: Leases the subprocesses take: the schedule lease and the Work claim lease (seconds). An
#: admitted Work attempt holds its retry policy's lease instead (one minute for the demo Work).
LEASE_SECONDS = 5

DEFAULT_ARGS = {
    SCHEDULES: ("--lease-seconds", str(LEASE_SECONDS), "--max-schedules", "1000",
                "--passes", "3", "-v", "2"),
    WORK: ("--lease-seconds", str(LEASE_SECONDS), "--max-items", "1000", "--batch", "10"),
}
#: The Work worker admitting one row per transaction: the per-item shape the barrier tests of
#: one crashed attempt among bystanders describe (batched admission has its own crash tests,
#: tests/work/test_pipeline_crash.py).
PER_ITEM_WORK_ARGS = ("--lease-seconds", str(LEASE_SECONDS), "--max-items", "1000",
                      "--batch", "1")


def environment(crash_at: str | None = None, app: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DURABLE_SCHEDULE_CRASH_AT"}
    env["DATABASE_URL"] = database_url()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "testproject")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if crash_at is not None:
        if crash_at not in barriers.ALL:
            raise ValueError(f"unknown barrier {crash_at!r}")
        env["DURABLE_SCHEDULE_CRASH_AT"] = crash_at
    if app is not None:
        env["PGAPPNAME"] = app
    return env


def argv(command: str, *args: str) -> list[str]:
    return [sys.executable, str(MANAGE), command, *(args or DEFAULT_ARGS[command])]


def run(command: str, *args: str, crash_at: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    """Run one command to its end (or its death) and return what it printed."""
    return subprocess.run(argv(command, *args), env=environment(crash_at), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def start(command: str, *args: str, crash_at: str | None = None,
          app: str | None = None) -> subprocess.Popen:
    return subprocess.Popen(argv(command, *args), env=environment(crash_at, app), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def crash(command: str, barrier: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``command`` armed at ``barrier`` and prove it died there (exit 86, its message)."""
    done = run(command, *args, crash_at=barrier)
    assert done.returncode == barriers.CRASH_EXIT_CODE, (
        f"{command} armed at {barrier} exited {done.returncode}, not "
        f"{barriers.CRASH_EXIT_CODE}: the barrier was not reached\n{done.stdout[-2000:]}"
        f"\n{done.stderr[-3000:]}")
    assert f"crash barrier {barrier} reached" in done.stderr, done.stderr[-3000:]
    return done


def recover(command: str, *args: str) -> subprocess.CompletedProcess:
    """A fresh, unarmed process: the recovery pass. It must succeed."""
    done = run(command, *args)
    assert done.returncode == 0, f"recovery {command} failed\n{done.stdout}\n{done.stderr}"
    return done
