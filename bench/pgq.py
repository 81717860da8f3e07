"""The second peer: pgqueuer 1.6 (PostgreSQL job queue for Python), in the same run.

Its own schema (``Queries.install()``, durability ``durable``: every table LOGGED, pgqueuer's
default and the only setting comparable with ours) in its own database. The same number of no-op
jobs is enqueued once (batches of 1,000) into a template; each run gets a fresh copy and 1/2/4
worker processes ``QueueManager.run(batch_size=BATCH, mode=drain)`` -- ``batch_size``, its
largest dequeue, set to our largest claim (``bench.work.BATCH``: the runtime's default
maximum, which ``process_work_pass`` sizes each claim within) -- over the psycopg driver
(autocommit, as pgqueuer requires). A finished job leaves the queue table for
``pgqueuer_log`` (status ``successful``), written by pgqueuer's completion buffer (up to
``batch_size`` completions in one statement, flushed on size or timeout): that buffer holds
acknowledged completions only in memory until it flushes, a trade-off ours does not make
(docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import psycopg

from bench import common, counting, work

TEMPLATE = common.PREFIX + "pq"
LOADED = common.PREFIX + "pq_jobs"
RUN_DB = common.PREFIX + "pq_run"
ENTRYPOINT = "bench_noop"
BATCH = work.BATCH  # ours' largest claim: equal batch size by construction


async def _queries(url: str):
    from pgqueuer import PsycopgDriver, Queries

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    return conn, Queries(PsycopgDriver(conn))


def build(n_jobs: int) -> str:
    """``ds_bench_pq``: pgqueuer's schema only; ``ds_bench_pq_jobs``: plus n no-op jobs."""
    url = common.create_db(TEMPLATE)

    async def install() -> None:
        conn, q = await _queries(url)
        async with conn:
            await q.install()

    asyncio.run(install())
    url = common.create_db(LOADED, template=TEMPLATE)

    async def load() -> None:
        conn, q = await _queries(url)
        async with conn:
            for start in range(0, n_jobs, 1000):
                k = min(1000, n_jobs - start)
                await q.enqueue([ENTRYPOINT] * k, [None] * k, [0] * k)

    asyncio.run(load())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("vacuum analyze")
    return LOADED


def worker_child(barrier, url: str, seconds: float, sleep_s: float, concurrency: int) -> dict:
    from pgqueuer import QueueManager
    from pgqueuer.types import QueueExecutionMode

    counting.install()

    async def main() -> dict:
        conn, q = await _queries(url)
        async with conn:
            qm = QueueManager(q)

            @qm.entrypoint(ENTRYPOINT)
            async def noop(job) -> None:
                if sleep_s:
                    await asyncio.sleep(sleep_s)

            barrier.wait(60)
            start = counting.count()
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(
                    qm.run(batch_size=BATCH, mode=QueueExecutionMode.drain,
                           dequeue_timeout=timedelta(seconds=0.2),
                           max_concurrent_tasks=max(concurrency, 2 * BATCH),
                           log_aggregation_interval=timedelta(0)),
                    timeout=seconds)
            except TimeoutError:
                pass
            return {"count": 0, "t0": t0, "t1": time.monotonic(),
                    "statements": counting.count() - start}

    return asyncio.run(main())


def run_workers(workers: int, seconds: float) -> dict:
    url = common.create_db(RUN_DB, template=LOADED)
    try:
        results = common.run_processes(worker_child, [(url, seconds, 0.0, 1)] * workers,
                                       timeout=seconds + 120)
        out = common.combine(results)
        with psycopg.connect(url) as conn:
            done = conn.execute("select count(*) from pgqueuer_log"
                                " where status = 'successful'").fetchone()[0]
        out["count"] = done
        out["rate"] = done / out["elapsed"]
        out["statements_per_item"] = (sum(r["statements"] for r in results) / done
                                      if done else None)
        return out
    finally:
        common.drop_db(RUN_DB)


def enqueue_child(barrier, url: str, n: int, batch: int) -> dict:
    counting.install()

    async def main() -> dict:
        conn, q = await _queries(url)
        async with conn:
            await q.enqueue(ENTRYPOINT, None)
            barrier.wait(60)
            start = counting.count()
            t0 = time.monotonic()
            for _ in range(n // batch):
                if batch == 1:
                    await q.enqueue(ENTRYPOINT, None)
                else:
                    await q.enqueue([ENTRYPOINT] * batch, [None] * batch, [0] * batch)
            return {"count": n // batch * batch, "t0": t0, "t1": time.monotonic(),
                    "statements": counting.count() - start}

    return asyncio.run(main())


def enqueue_rate(n: int, batch: int = 1) -> dict:
    url = common.create_db(RUN_DB, template=LOADED)  # a queue with rows and statistics
    try:
        results = common.run_processes(enqueue_child, [(url, n, batch)], timeout=300)
        out = common.combine(results)
        out["statements_per_item"] = results[0]["statements"] / out["count"]
        return out
    finally:
        common.drop_db(RUN_DB)
