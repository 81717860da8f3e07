"""Issue 5 item 1 for `process_work --loop`: NOTIFY wakes an idle loop at once; SIGTERM during a
pass lets the current item finish and exits 0 with no lease left behind."""

from __future__ import annotations

import pytest
from demo import pipeline_targets, runner_targets
from demo.work import touch  # noqa: F401  (registers the definitions in this process)

from tests.runner.loophelpers import listening, sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def test_work_loop__notify_wakes_an_idle_loop_well_before_its_idle_timer():
    # The idle timer is 10 minutes: if the Work runs at all within the test's bound, NOTIFY woke
    # the loop. Real clock (no controlled clock): latency is measured by PostgreSQL.
    proc = start_loop("process_work", env={"DURABLE_MAX_IDLE_SECONDS": "600"})
    try:
        wait_until(lambda: listening("durable_work_due"), what="the loop to LISTEN and idle")
        touch.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1", payload={})
        wait_until(lambda: sql("select 1 from durable_work where state = 'succeeded'"),
                   timeout=30, what="the Work to run")
        [(latency,)] = sql("select extract(epoch from attempt_started_at - accepted_at)"
                           " from durable_work")
        assert latency < 1.0, f"woken after {latency:.3f}s"
    finally:
        code, out = stop(proc)
    assert code == 0, out


def test_work_loop__sigterm_mid_pass_finishes_the_item_and_exits_zero():
    runner_targets.slow.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1",
                                payload={"seconds": 1.5})
    proc = start_loop("process_work")
    try:
        wait_until(lambda: sql("select 1 from durable_work where state = 'running'"),
                   what="the executor to start")
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert sql("select state from durable_work") == [("succeeded",)]
    # Terminal Work leaves no dispatch row, so no lease of this process outlives it.
    assert sql("select count(*) from durable_work_dispatch") == [(0,)]
    assert sql("select count(*) from demo_effect") == [(1,)]


def test_work_loop__sigterm_drains_every_in_flight_item_at_concurrency_4():
    """Issue 16 item 3: SIGTERM stops claiming; the four running attempts finish within their
    leases and are committed; the two admitted ahead but not started are handed back (due
    again at once, no slot used), and no lease is left behind."""
    for n in range(6):
        pipeline_targets.marked_slow.enqueue(scope="tenant-a", command=f"c-{n}",
                                             idempotency_key=f"k-{n}", payload={"seconds": 1.5})
    proc = start_loop("process_work", "--concurrency", "4", "--batch", "10")
    try:
        wait_until(lambda: sql("select count(*) from demo_effect where key = 'started'"
                               )[0][0] == 4, what="four executors to start")
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert sql("select state, count(*) from durable_work group by state order by state") == [
        ("pending", 2), ("succeeded", 4)]
    assert sql("select count(*) from demo_effect") == [(4,)]  # nothing else started
    assert sql("select count(*) from durable_work_permit where outcome = 'proven_no_effect'"
               ) == [(2,)]
    # The two that never started hold no lease: nothing waits for this dead process.
    assert sql("select count(*) from durable_work_dispatch where lease_owner is not null"
               " and lease_expires_at > now()") == [(0,)]


def test_work_loop__connections_of_a_concurrent_worker_stay_within_the_bound():
    """docs/operations.md: one pipeline connection, one LISTEN connection, one heartbeat
    connection (it beats several times here), at most N pool threads (these executors write an
    effect row), no watchdog for jobs shorter than half their renewal cadence. Sampled from
    pg_stat_activity while the worker runs."""
    for n in range(24):
        runner_targets.slow.enqueue(scope="tenant-a", command=f"c-{n}",
                                    idempotency_key=f"k-{n}", payload={"seconds": 0.2})
    app = "ds-conn-bound"
    proc = start_loop("process_work", "--concurrency", "4", "--batch", "4",
                      env={"PGAPPNAME": app, "DURABLE_HEARTBEAT_SECONDS": "0.2"})
    most = 0

    def sample():
        nonlocal most
        [(now,)] = sql("select count(*) from pg_stat_activity where application_name = %s",
                       (app,))
        most = max(most, now)
        return sql("select count(*) from durable_work where state = 'succeeded'")[0][0] == 24

    try:
        wait_until(sample, timeout=60, what="all 24 items to run")
    finally:
        code, out = stop(proc)
    assert code == 0, out
    # pipeline + LISTEN + heartbeat + the pool threads that used the ORM (the start-up probes
    # are closed before the first pass)
    assert 4 <= most <= 3 + 4, most
