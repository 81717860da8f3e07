"""Issue 16 item 3: ``--concurrency N`` -- N executors at once (pool threads, and ``async def``
executors on one event loop), one shared claim/outcome pipeline, every outcome once.

Committed transactions (``transactional_db``): the pool threads have their own connections and
see only committed rows. The deadline-bound items use a deadline one second after the frozen
database clock, so their local cancel point comes one real second after admission; nothing
here asserts a duration.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.errors import InvalidConcurrency
from durable_schedule.work.concurrency import shutdown_pool
from tests.conftest import T0
from tests.work.conftest import permits, rows, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)
SECOND = timedelta(seconds=1)


@pytest.fixture(autouse=True)
def _fresh_pool():
    yield
    shutdown_pool()


def test_concurrency__a_mix_of_fast_slow_failing_and_deadline_bound_items(
        committed_clock, define):
    d = define("test.mix")
    threads: set[str] = set()
    running, most = [0], [0]
    lock = threading.Lock()

    @d.executor
    def run(ctx, payload):
        with lock:
            threads.add(threading.current_thread().name)
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            kind = payload["kind"]
            if kind == "fail":
                raise ValueError(f"item {payload['n']} refused")
            if kind == "slow":
                ctx.cancelled.wait(0.3)
            if kind == "deadline":
                if not ctx.cancelled.wait(30):
                    raise AssertionError("never cancelled")
                raise TimeoutError("stopped at the deadline")
            return {"kind": kind, "n": payload["n"]}
        finally:
            with lock:
                running[0] -= 1

    kinds = ["fast"] * 6 + ["slow"] * 3 + ["fail"] * 2 + ["deadline"] * 2
    ids = {}
    for n, kind in enumerate(kinds):
        deadline = T0 + SECOND if kind == "deadline" else None
        ids[n] = (kind, d.enqueue(scope="tenant-a", command=f"c-{n}", idempotency_key=f"k-{n}",
                                  payload={"kind": kind, "n": n}, deadline=deadline).work_id)
    counts = run_pass(concurrency=4, batch=10, max_items=len(kinds))
    assert counts.claimed == len(kinds) and counts.admitted == len(kinds)
    assert (counts.succeeded, counts.retried, counts.expired) == (9, 2, 2)
    assert len(threads) > 1 and most[0] > 1  # executors really ran side by side
    for kind, work_id in ids.values():
        state = work_row(work_id, "state")[0]
        assert state == {"fast": "succeeded", "slow": "succeeded", "fail": "pending",
                         "deadline": "expired"}[kind], (kind, state)
        assert len(permits(work_id)) == 1  # one attempt each: nothing ran twice
    error = work.get("tenant-a", ids[12][1]).last_error
    assert error["class"] == "builtins.TimeoutError"
    assert rows("select count(*) from durable_work_dispatch d join durable_work w"
                " on w.id = d.work_ref where w.state = 'running'") == [(0,)]


def test_concurrency__async_executors_run_many_at_once_on_one_loop(committed_clock, define):
    d = define("test.async_io")
    loops: set[int] = set()
    running, most = [0], [0]

    @d.executor
    async def run(ctx, payload):
        loops.add(id(asyncio.get_running_loop()))
        running[0] += 1
        most[0] = max(most[0], running[0])
        try:
            # Wait until several are in flight (bounded), as I/O-bound jobs would overlap.
            for _ in range(200):
                if most[0] >= 5:
                    break
                await asyncio.sleep(0.01)
            return {"n": payload["n"]}
        finally:
            running[0] -= 1

    for n in range(20):
        d.enqueue(scope="tenant-a", command=f"c-{n}", idempotency_key=f"k-{n}",
                  payload={"n": n})
    counts = run_pass(concurrency=20, batch=20, max_items=20)
    assert counts.succeeded == 20
    assert len(loops) == 1 and most[0] >= 5


def test_concurrency__an_async_executor_is_cancelled_at_its_deadline(committed_clock, define):
    d = define("test.async_deadline")
    cancelled = []

    @d.executor
    async def run(ctx, payload):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(ctx.attempt)
            raise
        return {}

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={},
                        deadline=T0 + SECOND).work_id
    counts = run_pass(concurrency=2)
    assert cancelled == [1] and counts.expired == 1
    state, error = work_row(work_id, "state", "last_error")
    assert state == "expired"
    assert '"DS226"' in error and "AttemptCancelled" in error


def test_concurrency__an_async_executor_also_runs_in_a_sequential_pass(committed_clock, define):
    d = define("test.async_seq")

    @d.executor
    async def run(ctx, payload):
        await asyncio.sleep(0)
        return {"attempt": ctx.attempt}

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                        payload={}).work_id
    assert run_pass().succeeded == 1
    assert work.get("tenant-a", work_id).result == {"attempt": 1}


def test_concurrency__bad_values_are_refused_before_anything_runs(committed_clock, define):
    for bad in (0, 257, "4", True, 2.0):
        with pytest.raises(InvalidConcurrency):
            run_pass(concurrency=bad)


def test_concurrency__the_command_refuses_a_bad_concurrency_with_its_code(committed_clock):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="DS225"):
        call_command("process_work", "--concurrency", "0")
    assert rows("select count(*) from durable_work_history") == [(0,)]


def test_concurrency__the_command_runs_a_concurrent_pass(committed_clock, define):
    from io import StringIO

    from django.core.management import call_command

    d = define("test.cmd_concurrent")
    d.executor(lambda ctx, payload: {"n": payload["n"]})
    for n in range(6):
        d.enqueue(scope="tenant-a", command=f"c-{n}", idempotency_key=f"k-{n}",
                  payload={"n": n})
    out = StringIO()
    call_command("process_work", "--concurrency", "3", "--batch", "2", stdout=out)
    assert "succeeded=6" in out.getvalue()
