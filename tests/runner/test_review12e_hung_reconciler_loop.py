"""``process_work --loop``, a synchronous reconciler that blocks (ignoring ``ctx.cancelled``)
and SIGTERM, with a real process (docs/work.md "Concurrency"): the drain waits for the
reconciler -- sync code cannot be interrupted -- and when it answers its verdict is recorded
(NotApplied: the retry is scheduled by the policy's backoff), no new attempt is started by the
stopping worker, and the process exits 0. Nothing is retried blindly. (A NotApplied whose next
slot is already due is handed back: tests/work/test_stopping_reconciliation.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import runner_targets
from django.db import connection

from tests.runner.loophelpers import sql, start_loop, stop, wait_until
from tests.work.conftest import run_pass

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def test_sigterm__the_drain_waits_for_a_blocked_sync_reconciler_and_starts_nothing(
        committed_clock):
    work_id = runner_targets.gated.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                                           payload={}).work_id
    with pytest.raises(KeyboardInterrupt):
        run_pass()
    connection.close()
    committed_clock.advance(timedelta(minutes=1))  # the crashed attempt's lease ends
    proc = start_loop("process_work")
    try:
        wait_until(lambda: sql("select 1 from durable_work_history where event = 'reconciling'"),
                   timeout=30, what="the reconciler to start")
        proc.send_signal(15)
        # The worker is stopping but blocked in the reconciler: release it.
        sql("insert into demo_effect (work_id, attempt, key) values (%s, 1, 'release')",
            (work_id,))
    finally:
        code, out = stop(proc, timeout=40)
    assert code == 0, out
    assert sql("select permit_no, outcome, resolution_source from durable_work_permit"
               " order by permit_no") == [(1, "not_applied", "reconciler")]
    assert sql("select key from demo_effect order by id") == [("release",)]
    assert sql("select state, attempt from durable_work") == [("pending", 1)]
    assert [e for (e,) in sql("select event from durable_work_history order by id")] == [
        "accepted", "admitted", "reconciling", "retry_scheduled"]
