"""``process_work --loop`` and an async executor that ignores its cancellation, with a real
process and SIGTERM (docs/work.md "Concurrency").

Before: the runtime cancelled the task at the attempt's deadline and then awaited it without
bound, so the SIGTERM drain never ended (a supervisor had to SIGKILL the worker). Now, after
the grace (5 s: the lease ends at the deadline), the worker stops waiting, logs the Work
identity, leaves the attempt un-acknowledged and exits 0."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import runner_targets

from tests.runner.loophelpers import sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def test_sigterm__the_drain_stops_waiting_for_an_executor_that_ignores_cancellation():
    [(now,)] = sql("select now()")  # the real clock: the subprocess reads it too
    work_id = runner_targets.stubborn.enqueue(
        scope="tenant-a", command="c", idempotency_key="k", payload={"seconds": 60},
        deadline=now + timedelta(seconds=12)).work_id  # time for the process to start
    proc = start_loop("process_work")
    try:
        wait_until(lambda: sql("select 1 from durable_work where state = 'running'"),
                   timeout=30, what="the executor to start")
    finally:
        code, out = stop(proc, timeout=40)
    assert code == 0, out
    assert "did not finish within" in out and str(work_id) in out, out
    # Left as a crashed worker leaves it: the permit admitted and unresolved, nothing recorded.
    assert sql("select outcome from durable_work_permit") == [(None,)]
    assert sql("select state from durable_work") == [("running",)]
