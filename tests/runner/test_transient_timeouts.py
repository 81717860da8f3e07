"""Issue 11 item 6: a lock or statement timeout in a row's own transaction is retried for THAT row
under the claim it still holds (3 retries, 250/500/1000 ms), then the command exits non-zero
naming the row and the phase. Before the fix, the runner re-ran the whole pass, which found the
row still leased by its own committed claim, claimed nothing and exited 0.

The timeouts are real: a second connection holds a row lock the scoped transaction needs, and the
command runs in a subprocess whose every connection gets a short ``lock_timeout`` or
``statement_timeout`` through libpq's ``PGOPTIONS``. The claim statements touch only the
dispatch tables, so only the per-row transaction meets the lock.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import psycopg
import pytest
from demo import schedule_targets
from demo.work import touch  # noqa: F401  (registers the definitions in this process)

from durable_schedule import schedules
from tests.conftest import T0, database_url
from tests.runner.loophelpers import ROOT, sql

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SCOPE = "tenant-a"
HOUR = timedelta(hours=1)
TIMEOUTS = {
    "lock_timeout": ("-c lock_timeout=300", "55P03"),
    "statement_timeout": ("-c statement_timeout=300", "57014"),
}


def command(name: str, timeout_option: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, DATABASE_URL=database_url(), PGOPTIONS=timeout_option,
               PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "testproject/manage.py", name, *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def row_lock(statement: str) -> psycopg.Connection:
    """A connection (the owner, which row-level security does not bind) holding the locks of
    ``statement`` until it rolls back."""
    conn = psycopg.connect(database_url())
    cur = conn.execute(statement)
    assert cur.description is None or cur.fetchall(), "nothing to lock"
    return conn


#: Admission inserts the effect permit; claim and the admission's reads do not write permits.
#: (Work row locks would not do: admission locks the Work row with SKIP LOCKED, by design.)
PERMIT_WRITES_BLOCKED = "lock table durable_work_permit in share mode"


def read_until(proc: subprocess.Popen, marker: str) -> list[str]:
    """The command's output lines up to and including the first containing ``marker``."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if marker in line:
            return lines
    raise AssertionError("the command ended before printing " + repr(marker) + ":\n"
                         + "".join(lines))


def due_schedule(committed_clock) -> None:
    target = schedule_targets.report.target(payload={"report": "nightly"})
    schedules.create(SCOPE, "s", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)


@pytest.mark.parametrize("kind", sorted(TIMEOUTS))
def test_schedules__a_persistent_timeout_exits_non_zero_naming_schedule_and_phase(
        committed_clock, kind):
    option, sqlstate = TIMEOUTS[kind]
    due_schedule(committed_clock)
    blocker = row_lock("select 1 from durable_schedule_definition where schedule_id = 's'"
                       " for update")
    try:
        proc = command("process_schedules", option)
        out, _ = proc.communicate(timeout=60)
    finally:
        blocker.rollback()
        blocker.close()
    assert proc.returncode != 0, out
    assert "DS405" in out and "schedule.step failed 4 times" in out, out
    assert "schedule_id='s'" in out and sqlstate in out, out
    # Three retries of the same schedule, not of the pass: one claim, four attempts.
    assert out.count("transient database error in schedule.step") == 3, out
    assert "claimed=0" not in out
    assert sql("select count(*) from durable_schedule_occurrence") == [(0,)]
    assert sql("select count(*) from durable_work") == [(0,)]


@pytest.mark.parametrize("kind", sorted(TIMEOUTS))
def test_schedules__a_timeout_that_clears_is_retried_for_the_same_schedule(
        committed_clock, kind):
    option, _ = TIMEOUTS[kind]
    due_schedule(committed_clock)
    blocker = row_lock("select 1 from durable_schedule_definition where schedule_id = 's'"
                       " for update")
    proc = command("process_schedules", option)
    try:
        # The first attempt met the lock; release it while the runner backs off (250 ms, then
        # 500 ms and 1 s more if needed: the retry must find the same claim and finish it).
        head = read_until(proc, "transient database error in schedule.step")
    finally:
        blocker.rollback()
        blocker.close()
    rest, _ = proc.communicate(timeout=60)
    out = "".join(head) + rest
    assert proc.returncode == 0, out
    assert "pass 1: claimed=1 materialized=1" in out, out
    assert sql("select count(*) from durable_schedule_occurrence") == [(1,)]
    assert sql("select count(*) from durable_work") == [(1,)]


def enqueue_due_work() -> None:
    touch.enqueue(scope=SCOPE, command="c-1", idempotency_key="k-1", payload={})


def test_work__a_persistent_timeout_in_admission_exits_non_zero_naming_the_row_and_phase():
    option, sqlstate = TIMEOUTS["lock_timeout"]
    enqueue_due_work()
    blocker = row_lock(PERMIT_WRITES_BLOCKED)
    try:
        proc = command("process_work", option)
        out, _ = proc.communicate(timeout=60)
    finally:
        blocker.rollback()
        blocker.close()
    assert proc.returncode != 0, out
    # The batched pipeline claims and admits in one transaction (docs/work.md "Batched Work"):
    # the failed admission rolls its claim back with it, so the retry of the phase claims the
    # same row again -- it is not the "claim still held, retry claims nothing" shape of a
    # per-item admission, which tests/work cover through the per-item path.
    assert "DS405" in out and "work.pass failed 4 times" in out, out
    assert sqlstate in out, out
    assert out.count("transient database error in work.pass") == 3, out
    assert sql("select state, attempt from durable_work") == [("pending", 0)]


def test_work__a_timeout_that_clears_is_retried_for_the_same_row():
    option, _ = TIMEOUTS["statement_timeout"]
    enqueue_due_work()
    blocker = row_lock(PERMIT_WRITES_BLOCKED)
    proc = command("process_work", option)
    try:
        head = read_until(proc, "transient database error in work.pass")
    finally:
        blocker.rollback()
        blocker.close()
    rest, _ = proc.communicate(timeout=60)
    out = "".join(head) + rest
    assert proc.returncode == 0, out
    assert "claimed=1 admitted=1 succeeded=1" in out, out
    assert sql("select state from durable_work") == [("succeeded",)]
    assert sql("select count(*) from demo_effect") == [(1,)]


@pytest.mark.parametrize("kind", sorted(TIMEOUTS))
def test_schedules__a_timeout_inside_the_batchs_pipeline_rolls_it_back_and_the_others_progress(
        committed_clock, kind):
    # Two schedules of one scope are one batch: its locking read goes with the scope entry in
    # one psycopg pipeline (store/transactions.py routed_pipelined). The timeout there rolls the
    # batch back (after its retries); on the same connection each schedule then runs alone:
    # the locked one fails naming itself, the other is materialized exactly once.
    option, sqlstate = TIMEOUTS[kind]
    target = schedule_targets.report.target(payload={"report": "nightly"})
    for name in ("s", "t"):
        schedules.create(SCOPE, name, schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    blocker = row_lock("select 1 from durable_schedule_definition where schedule_id = 's'"
                       " for update")
    try:
        proc = command("process_schedules", option)
        out, _ = proc.communicate(timeout=120)
    finally:
        blocker.rollback()
        blocker.close()
    assert proc.returncode != 0, out
    assert "batch of 2 schedules rolled back" in out, out
    assert "schedule_id='s'" in out and sqlstate in out, out
    assert sql("select schedule_id, count(*) from durable_schedule_occurrence"
               " group by schedule_id") == [("t", 1)]
    assert sql("select count(*) from durable_work") == [(1,)]
    assert sql("select schedule_id, event from durable_schedule_history"
               " where event <> 'created' order by id") == [("t", "materialized")]
