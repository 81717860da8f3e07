"""``--concurrency`` slot threads honour Django's ``CONN_HEALTH_CHECKS`` per job (work/
concurrency.py): a slot connection cut while the slot was idle (``idle_session_timeout``, a
failover, a restarted pooler) is checked and replaced before the next job's first query, so that
attempt does not fail. Django resets its health check only at request boundaries, which slot
threads never see: before, the first attempt after the cut failed on the dead connection (and a
``reconcile_before_retry`` Work then waited for reconciliation and its next planned slot)."""

from __future__ import annotations

import pytest
from django.db import connections

from durable_schedule.work import concurrency
from tests.runner.loophelpers import backend_pid, run_on, sql

pytestmark = pytest.mark.django_db(transaction=True)


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
