"""Issue 12 item 2: ``--loop`` runners ride out a database outage (here: PgBouncer stopped and
started again under them, as a failover or a pooler restart looks to a client) and carry on;
nothing is lost or duplicated. Past ``OUTAGE_TOLERANCE_SECONDS`` they exit non-zero with DS405.
A bounded pass keeps its 3 retries (tests/runner/test_schedule_loop.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from demo.work import touch

from durable_schedule import schedules
from tests.conftest import T0
from tests.runner.loophelpers import ROOT, sql, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SCOPE = "tenant-a"
HOUR = timedelta(hours=1)


class Loop:
    """A --loop command through the pooler whose output is collected by a thread."""

    def __init__(self, url: str, command: str, **env: str) -> None:
        full = dict(os.environ, DATABASE_URL=url, PYTHONUNBUFFERED="1",
                    DURABLE_PREPARE_STATEMENTS="0", DURABLE_MAX_IDLE_SECONDS="0.5", **env)
        self.proc = subprocess.Popen(
            [sys.executable, "testproject/manage.py", command, "--loop"], cwd=ROOT, env=full,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def said(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def finish(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout=60)
        self._reader.join(timeout=10)
        return code, "".join(self.lines)


def test_failover__loops_survive_a_pooler_restart_and_nothing_is_lost_or_duplicated(
        pgbouncer, pooled_url, committed_clock):
    for i in range(3):
        schedules.create(SCOPE, f"s{i}", schedules.Every(HOUR), touch.target(payload={}))
    committed_clock.set(T0 + HOUR)
    loops = [Loop(pooled_url, "process_schedules"), Loop(pooled_url, "process_work")]
    try:
        wait_until(lambda: sql("select count(*) from durable_work where state = 'succeeded'")
                   == [(3,)], timeout=60, what="the first instants to run")
        pgbouncer.stop()
        # The outage: both loops notice; meanwhile new facts are accepted directly (an API
        # server on another path) and more instants fall due.
        touch.enqueue(scope=SCOPE, command="c-1", idempotency_key="k-1", payload={})
        committed_clock.set(T0 + 2 * HOUR)
        sql("update durable_schedule_dispatch set due_at = due_at")  # wake-up (not needed)
        for one in loops:
            wait_until(lambda one=one: one.said("database connection lost"), timeout=60,
                       what="the loops to notice the outage")
        pgbouncer.start()
        for one in loops:
            wait_until(lambda one=one: one.said("database connection restored"), timeout=60,
                       what="the loops to reconnect")
        wait_until(lambda: sql("select count(*) from durable_work where state = 'succeeded'")
                   == [(7,)], timeout=60, what="the Work of and after the outage to run")
        assert all(one.proc.poll() is None for one in loops), "a loop died"
    finally:
        results = [one.finish() for one in loops]
    for code, out in results:
        assert code == 0, out
        assert out.count("database connection lost") == 1, out
        assert out.count("database connection restored") == 1, out
    # Every instant exactly once, every Work once, every effect once.
    assert sql("select count(*), count(distinct (schedule_id, first_nominal_utc))"
               " from durable_schedule_occurrence") == [(6, 6)]
    assert sql("select count(*) from durable_work") == [(7,)]
    assert sql("select count(*) from demo_effect") == [(7,)]


def test_failover__a_loop_gives_up_with_ds405_after_the_tolerance(pgbouncer, pooled_url):
    one = Loop(pooled_url, "process_work", DURABLE_OUTAGE_TOLERANCE_SECONDS="2")
    try:
        wait_until(lambda: one.said("work pass 1"), timeout=60, what="a first pass")
        pgbouncer.stop()
        code = one.proc.wait(timeout=90)
    finally:
        code, out = one.finish()
    assert code != 0, out
    assert "DS405" in out and "OUTAGE_TOLERANCE_SECONDS" in out, out
    assert out.count("database connection lost") == 1, out
    assert out.count("database still down") == 1, out
    assert "Traceback" not in out, out


def test_failover__sigterm_during_an_outage_exits_zero(pgbouncer, pooled_url):
    one = Loop(pooled_url, "process_work")
    try:
        wait_until(lambda: one.said("work pass 1"), timeout=60, what="a first pass")
        pgbouncer.stop()
        wait_until(lambda: one.said("database connection lost"), timeout=60,
                   what="the loop to notice the outage")
    finally:
        code, out = one.finish()
    assert code == 0, out


def test_failover__classifies_connection_loss():
    from django.db import OperationalError, ProgrammingError

    from durable_schedule.errors import RetriesExhausted
    from durable_schedule.runner.outage import backoff_delays, is_connection_loss
    from tests.runner.test_retry_policy import django_error

    assert is_connection_loss(OperationalError("server closed the connection unexpectedly"))
    assert is_connection_loss(django_error(OperationalError, "08006"))
    assert is_connection_loss(django_error(OperationalError, "57P01"))
    wrapped = RetriesExhausted("x")
    wrapped.__cause__ = django_error(OperationalError, "08001")
    assert is_connection_loss(wrapped)
    assert not is_connection_loss(django_error(OperationalError, "55P03"))  # lock timeout
    assert not is_connection_loss(django_error(ProgrammingError, "42501"))
    assert not is_connection_loss(ValueError("a bug"))
    import random

    delays = backoff_delays(random.Random(7))
    first = [next(delays) for _ in range(12)]
    assert all(0 < d <= 10.0 for d in first)
    assert max(first[:1]) <= 0.5  # starts at the base
    assert len(set(first)) == len(first)  # jittered
