"""A ``--loop`` runner under a server that ends idle sessions: ``idle_session_timeout`` set on the
database (or the role) makes PostgreSQL terminate every connection that idles longer, with
SQLSTATE 57P05, and the runner's connection idles between passes. The runner must take that as a
lost connection (retry on a fresh one, ride it out), never exit on it; every item runs once."""

from __future__ import annotations

import pytest
from demo import pipeline_targets
from django.db import OperationalError, connection

from durable_schedule.runner import outage, retry
from tests.runner.loophelpers import listening, sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


@pytest.fixture
def idle_sessions_cut():
    """idle_session_timeout on the test database for new sessions; reset afterwards."""
    # This process's own connection is opened first, so it keeps the old default: only the
    # runner started afterwards (and the helpers' short-lived connections) get the timeout.
    connection.ensure_connection()
    [(db,)] = sql("select current_database()")
    sql(f"alter database \"{db}\" set idle_session_timeout = '300ms'")
    try:
        yield
    finally:
        sql(f'alter database "{db}" reset idle_session_timeout')


def test_idle_session_timeout__the_loop_rides_it_out_and_every_item_runs_once(idle_sessions_cut):
    # Without --concurrency the executor shares the pass's connection: the cut meets the pass.
    # (A --concurrency slot's idle connection is Django's CONN_HEALTH_CHECKS' business, see
    # tests/runner/test_slot_health_checks.py.)
    proc = start_loop("process_work", "--batch", "10", env={"DURABLE_MAX_IDLE_SECONDS": "1"})
    try:
        for n in range(3):
            pipeline_targets.marked_slow.enqueue(
                scope="tenant-a", command=f"a-{n}", idempotency_key=f"a-{n}", payload={"seconds": 0}
            )
        wait_until(
            lambda: sql("select count(*) from durable_work where state = 'succeeded'")[0][0] == 3,
            what="the first items to run",
        )
        # Idle longer than the timeout: the server ends the loop's sessions (57P05), the
        # listener's among them (the pass's connection idles as long between passes).
        wait_until(lambda: listening("durable_work_due"), what="the loop to LISTEN")
        wait_until(
            lambda: not listening("durable_work_due"), what="the server to end the idle listener"
        )
        for n in range(3):
            pipeline_targets.marked_slow.enqueue(
                scope="tenant-a", command=f"b-{n}", idempotency_key=f"b-{n}", payload={"seconds": 0}
            )
        wait_until(
            lambda: (
                proc.poll() is not None
                or sql("select count(*) from durable_work where state = 'succeeded'")[0][0] == 6
            ),
            what="the later items to run (or the loop to exit)",
        )
        assert proc.poll() is None, "the loop exited on idle_session_timeout"
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert "idle-session timeout" in out, "the fault did not happen: " + out
    assert sql("select count(*) from durable_work where state = 'succeeded'") == [(6,)], out
    assert sql("select count(*) from demo_effect where key = 'started'") == [(6,)], out
    assert sql("select count(*) from durable_work_dispatch") == [(0,)]


@pytest.mark.parametrize("sqlstate", ["57P05", "25P03"])
def test_session_ended_for_idling__is_transient_and_a_connection_loss(sqlstate):
    class Ended(Exception):
        pass

    exc = Ended("terminating connection due to a timeout")
    exc.sqlstate = sqlstate
    wrapped = OperationalError("terminating connection")
    wrapped.__cause__ = exc
    assert retry.is_transient(wrapped)
    assert outage.is_connection_loss(wrapped)
