"""Issue 5 tests for the schedule runner, with real processes (docs/protocol/runner.md,
docs/protocol/runner.md rules R1-R3): quarantine inside a live loop, pg_terminate_backend mid-pass,
permission errors not retried, SIGTERM during a pass, NOTIFY wake-up."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, timedelta

import psycopg
import pytest
from demo import schedule_targets

from durable_schedule import schedules
from tests.conftest import T0, database_url
from tests.runner.loophelpers import ROOT, listening, sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SCOPE = "tenant-a"
HOUR = timedelta(hours=1)


@pytest.fixture
def target():
    return schedule_targets.report.target(payload={"report": "nightly"})


def occurrences_and_work() -> tuple[int, int, int]:
    [(occ, linked, work)] = sql(
        "select (select count(*) from durable_schedule_occurrence),"
        " (select count(distinct work_id) from durable_schedule_occurrence"
        "   where work_id is not null),"
        " (select count(*) from durable_work)")
    return occ, linked, work


def run_bounded(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "testproject/manage.py", "process_schedules", *args],
        cwd=ROOT, env={"DATABASE_URL": database_url(), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=timeout)


def blocker_on(table: str) -> psycopg.Connection:
    """A connection holding an exclusive lock on ``table`` until it rolls back."""
    conn = psycopg.connect(database_url())
    conn.execute(f"lock table {table} in access exclusive mode")
    return conn


def waiting_backend(blocker: psycopg.Connection) -> int | None:
    rows = sql("select pid from pg_stat_activity where datname = current_database()"
               " and wait_event_type = 'Lock' and pid <> %s", (blocker.info.backend_pid,))
    return rows[0][0] if rows else None


def test_loop__quarantines_a_tampered_generation_and_keeps_producing_work(
        committed_clock, target):
    schedules.create(SCOPE, "good", schedules.Every(HOUR), target)
    schedules.create(SCOPE, "bad", schedules.Every(HOUR), target)
    # Tamper as the owner with the append-only trigger disabled, as an attacker or a foreign
    # version of the code would: the stored interval is no longer an integer.
    sql("alter table durable_schedule_generation disable trigger user")
    try:
        sql("update durable_schedule_generation set spec = '{\"interval_us\": \"soon\","
            " \"anchor\": null}' where schedule_id = 'bad'")
    finally:
        sql("alter table durable_schedule_generation enable trigger user")
    committed_clock.set(T0 + HOUR)
    proc = start_loop("process_schedules")
    try:
        wait_until(lambda: sql("select 1 from durable_schedule_definition"
                               " where schedule_id = 'bad' and state = 'suspended'"),
                   what="the bad schedule to be quarantined")
        wait_until(lambda: sql("select 1 from durable_work"), what="Work of the good schedule")
        # The loop survives and keeps serving: the next instant of the good one also runs.
        committed_clock.set(T0 + 2 * HOUR)
        sql("update durable_schedule_dispatch set due_at = due_at where schedule_id = 'good'")
        assert proc.poll() is None, "the loop died"
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert "quarantined schedule tenant-a/bad" in out
    [(reason,)] = sql("select suspension_reason from durable_schedule_definition"
                      " where schedule_id = 'bad'")
    assert reason == "unevaluable"
    assert sql("select count(*) from durable_schedule_occurrence where schedule_id = 'bad'") \
        == [(0,)]


def test_bounded_pass__survives_pg_terminate_backend_mid_pass_without_duplicates(
        committed_clock, target):
    for i in range(3):
        schedules.create(SCOPE, f"s{i}", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    blocker = blocker_on("durable_schedule_dispatch")
    proc = subprocess.Popen(
        [sys.executable, "testproject/manage.py", "process_schedules", "--max-schedules", "10"],
        cwd=ROOT, env={"DATABASE_URL": database_url(), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pid = wait_until(lambda: waiting_backend(blocker), what="the claim to block")
        sql("select pg_terminate_backend(%s)", (pid,))
    finally:
        blocker.rollback()
        blocker.close()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "retrying" in out
    assert occurrences_and_work() == (3, 3, 3)


def test_bounded_pass__exits_non_zero_naming_the_phase_after_four_failures(
        committed_clock, target):
    schedules.create(SCOPE, "s", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    blocker = blocker_on("durable_schedule_dispatch")
    proc = subprocess.Popen(
        [sys.executable, "testproject/manage.py", "process_schedules"],
        cwd=ROOT, env={"DATABASE_URL": database_url(), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        killed = 0
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            pid = waiting_backend(blocker)
            if pid:
                sql("select pg_terminate_backend(%s)", (pid,))
                killed += 1
            time.sleep(0.05)
    finally:
        blocker.rollback()
        blocker.close()
    out, _ = proc.communicate(timeout=30)
    assert killed == 4, (killed, out)
    assert proc.returncode != 0
    assert "DS405" in out and "schedule.pass failed 4 times" in out
    assert occurrences_and_work() == (0, 0, 0)


def test_bounded_pass__a_permission_error_is_not_retried(committed_clock, target):
    schedules.create(SCOPE, "s", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    sql("revoke execute on function claim_schedule_dispatch(text, interval, integer)"
        " from durable_dispatcher")
    try:
        started = time.monotonic()
        # --skip-checks: the system check would refuse to start (DS304) before any pass; here
        # the runtime itself must meet the permission error and refuse to retry it.
        done = run_bounded("--skip-checks")
        elapsed = time.monotonic() - started
    finally:
        sql("grant execute on function claim_schedule_dispatch(text, interval, integer)"
            " to durable_dispatcher")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "permission denied" in output
    assert "retrying" not in output
    assert elapsed < 30  # no backoff sleeps were taken (they would add 1.75 s per phase)
    assert occurrences_and_work() == (0, 0, 0)


def test_loop__sigterm_mid_pass_finishes_the_transaction_and_exits_zero(
        committed_clock, target):
    for i in range(3):
        schedules.create(SCOPE, f"s{i}", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    blocker = blocker_on("durable_schedule_definition")
    proc = start_loop("process_schedules", "--max-schedules", "1")
    try:
        wait_until(lambda: waiting_backend(blocker), what="the pass to block mid-transaction")
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)  # the signal is delivered while the pass waits on the lock
    finally:
        blocker.rollback()
        blocker.close()
    code, out = stop(proc)
    assert code == 0, out
    occ, linked, work = occurrences_and_work()
    assert occ == linked == work == 1  # the in-flight decision committed whole; no more leases
    leases = sql("select count(*) from durable_schedule_dispatch where lease_owner is not null")
    assert leases == [(0,)]


def test_loop__notify_wakes_an_idle_loop_for_a_newly_due_schedule(target):
    # Real clock, idle timer of 10 minutes: only NOTIFY can wake the loop in time.
    proc = start_loop("process_schedules", env={"DURABLE_MAX_IDLE_SECONDS": "600"})
    try:
        wait_until(lambda: listening("durable_schedule_due"), what="the loop to LISTEN")
        [(now,)] = sql("select now()")
        when = now + timedelta(milliseconds=300)
        schedules.create(SCOPE, "soon", schedules.At(when.astimezone(UTC)), target)
        wait_until(lambda: sql("select 1 from durable_work"), timeout=30,
                   what="the At schedule's Work")
        [(accepted,)] = sql("select accepted_at from durable_work")
        lateness = (accepted - when).total_seconds()
        assert lateness < 1.0, f"noticed {lateness:.3f}s after its instant"
    finally:
        code, out = stop(proc)
    assert code == 0, out

