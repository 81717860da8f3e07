"""``--concurrency`` slot threads honour Django's ``CONN_HEALTH_CHECKS`` per job (work/
concurrency.py): a slot connection cut while the slot was idle (``idle_session_timeout``, a
failover, a restarted pooler) is checked and replaced before the next job's first query, so that
attempt does not fail. Django resets its health check only at request boundaries, which slot
threads never see: before, the first attempt after the cut failed on the dead connection (and a
``reconcile_before_retry`` Work then waited for reconciliation and its next planned slot)."""

from __future__ import annotations

import queue

import pytest
from django.db import connection, connections

from durable_schedule.work import concurrency
from tests.runner.loophelpers import sql

pytestmark = pytest.mark.django_db(transaction=True)


def run_on(pool, fn):
    box: queue.SimpleQueue = queue.SimpleQueue()

    def job():
        try:
            box.put(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 -- handed to the test thread
            box.put(("error", exc))

    pool.submit(job)
    return box.get(timeout=60)


def backend_pid():
    with connection.cursor() as cur:  # this thread's (the slot's) connection
        cur.execute("select pg_backend_pid()")
        return cur.fetchone()[0]


@pytest.mark.parametrize("checks", [True, False])
def test_slot__a_connection_cut_while_idle_is_replaced_before_the_next_job(checks):
    settings = connections["default"].settings_dict
    old = settings["CONN_HEALTH_CHECKS"]
    settings["CONN_HEALTH_CHECKS"] = checks
    pool = concurrency._Pool(1)
    try:
        kind, pid = run_on(pool, backend_pid)
        assert kind == "ok", pid
        assert sql("select pg_terminate_backend(%s)", (pid,)) == [(True,)]
        kind, value = run_on(pool, backend_pid)
        if checks:
            assert (kind, value != pid) == ("ok", True), value
        else:  # Django's default: the cut shows in the job, as documented
            assert kind == "error", value
    finally:
        pool.shutdown()
        settings["CONN_HEALTH_CHECKS"] = old
