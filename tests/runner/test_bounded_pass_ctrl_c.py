"""Ctrl-C (SIGINT) during a bounded pass -- ``process_work`` or ``process_schedules`` without
``--loop`` -- as a real process (docs/operations.md "Stopping"): the command ends with one line
on stderr and exit status 130 (the shell's 128 + SIGINT), no traceback, and the pass leaves what
an interrupt leaves (docs/work.md "Execution"): the interrupted attempt records no outcome and
is recovered after its lease, the claims it did not process are released. Before, the
KeyboardInterrupt escaped ``manage.py`` with a traceback of the executor's stack."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta

import psycopg
import pytest
from demo import runner_targets, schedule_targets
from demo.runner_targets import GATE_BOUND_SECONDS, RELEASE_KEY

from durable_schedule import schedules
from tests.conftest import T0, database_url
from tests.runner.loophelpers import ROOT, sql, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

HANG_BOUND_SECONDS = 60
HOUR = timedelta(hours=1)


def start(command: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    full_env = dict(os.environ, DATABASE_URL=database_url(), PYTHONUNBUFFERED="1")
    full_env.update(env or {})
    return subprocess.Popen(
        [sys.executable, "testproject/manage.py", command, *args],
        cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # A shell script's background job (`make test` runs tox environments two at a time)
        # starts with SIGINT ignored, and Python then keeps it ignored: no KeyboardInterrupt.
        # Give the command the disposition a terminal's Ctrl-C meets.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=HANG_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the pass did not end after SIGINT:\n{out}\n{err}") from None
    return proc.returncode, out, err


def assert_one_line_message(code: int, err: str, command: str) -> None:
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{command}: interrupted"), err


def test_ctrl_c_during_a_bounded_process_work_pass(committed_clock):
    first, second = (runner_targets.gated_sync.enqueue(
        scope="tenant-a", command="c", idempotency_key=key, payload={}).work_id
        for key in ("k1", "k2"))
    proc = start("process_work", "--batch", "2")
    try:
        wait_until(lambda: sql("select 1 from demo_effect where key = 'started'"),
                   timeout=HANG_BOUND_SECONDS, what="the executor to start")
        code, out, err = interrupt(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        sql("insert into demo_effect (work_id, attempt, key) values (%s, 0, %s)",
            (first, RELEASE_KEY))
    assert_one_line_message(code, err, "process_work")
    # The interrupted attempt: admitted, no outcome, its permit unresolved (recovered after its
    # lease, like a crashed worker's); the other Work was not started and holds no claim.
    started = sql("select work_id from demo_effect where key = 'started'")
    assert len(started) == 1
    interrupted = started[0][0]
    other = second if interrupted == first else first
    assert sql("select state, attempt from durable_work where work_id = %s",
               (interrupted,)) == [("running", 1)]
    assert sql("select outcome from durable_work_permit where work_id = %s",
               (interrupted,)) == [(None,)]
    # Claimed and admitted with it, not started: handed back, due again, no claim held.
    assert sql("select w.state, d.lease_owner from durable_work w join durable_work_dispatch d"
               " on d.work_ref = w.id where w.work_id = %s", (other,)) == [("pending", None)]
    assert sql("select outcome from durable_work_permit where work_id = %s",
               (other,)) == [("proven_no_effect",)]
    assert "committed before it: claimed=2" in err, err
    assert GATE_BOUND_SECONDS > HANG_BOUND_SECONDS / 2  # the executor was still waiting


def test_ctrl_c_during_a_bounded_process_schedules_pass(committed_clock):
    target = schedule_targets.report.target(payload={"report": "nightly"})
    for i in range(2):
        schedules.create("tenant-a", f"s{i}", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    blocker = psycopg.connect(database_url())  # holds the pass mid-transaction
    blocker.execute("select 1 from durable_schedule_definition for update")  # row locks
    proc = start("process_schedules", "--max-schedules", "2")
    try:
        wait_until(lambda: sql("select 1 from pg_stat_activity where datname ="
                               " current_database() and wait_event_type = 'Lock'"
                               " and pid <> %s", (blocker.info.backend_pid,)),
                   timeout=HANG_BOUND_SECONDS, what="the pass to block mid-transaction")
        code, out, err = interrupt(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        blocker.rollback()
        blocker.close()
    assert_one_line_message(code, err, "process_schedules")
    # The decision in progress rolled back whole: nothing materialized.
    assert sql("select (select count(*) from durable_schedule_occurrence),"
               " (select count(*) from durable_work)") == [(0, 0)]
    # The claims of the schedules whose decision did not commit are released: no lease is
    # left to expire, and another run right after the Ctrl-C materializes them at once.
    # Before, both dispatch rows kept the interrupted pass's lease until it expired.
    assert sql("select count(*) from durable_schedule_dispatch"
               " where lease_owner is not null") == [(0,)]
    again = start("process_schedules", "--max-schedules", "2")
    out, err = again.communicate(timeout=HANG_BOUND_SECONDS)
    assert again.returncode == 0, err
    assert "claimed=2" in out, out
    assert sql("select count(*) from durable_work") == [(2,)]
