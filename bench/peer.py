"""Scenario 5: the peer, Procrastinate (a PostgreSQL task queue for Python), in the same run.

Its own schema (``schema_manager.apply_schema``) in its own database, never ours. The same
no-op job count as our Work scenario is deferred once with ``batch_defer`` into a template
database; each run gets a fresh copy and 1/2/4 worker processes (``run_worker(wait=False,
concurrency=1)``: one sync no-op at a time, like our worker; jobs kept, not deleted, as ours
are). Procrastinate's worker fetches one job per transaction and finishes it in another
(docs/benchmarks.md: 1 fetch + 1 finish per job). The deferral rate (one ``defer`` per
transaction, one process) is measured separately on an empty copy.
"""

from __future__ import annotations

import asyncio
import time

import psycopg

from bench import common, counting

TEMPLATE = common.PREFIX + "pc"
LOADED = common.PREFIX + "pc_jobs"
RUN_DB = common.PREFIX + "pc_run"
TASK = "bench_noop"


SLEEP_TASK = "bench_sleep"


def make_app(url: str, max_size: int = 4):
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=max_size)
    )

    @app.task(name=TASK)
    def noop() -> None:
        return None

    @app.task(name=SLEEP_TASK)
    def sleep(seconds: float) -> None:
        # A sync task: Procrastinate runs it in a thread (sync_to_async), as ours runs its
        # executors in threads under --concurrency.
        time.sleep(seconds)

    app.bench_sleep = sleep
    return app, noop


def build_schema() -> str:
    """``ds_bench_pc``: Procrastinate's schema only."""
    url = common.create_db(TEMPLATE)
    app, noop = make_app(url)

    async def schema() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    asyncio.run(schema())
    return TEMPLATE


def build(n_jobs: int) -> str:
    """``ds_bench_pc`` (the schema) and ``ds_bench_pc_jobs``: plus n no-op jobs."""
    build_schema()
    url = common.create_db(LOADED, template=TEMPLATE)
    app, noop = make_app(url)

    async def load() -> None:
        async with app.open_async():
            for start in range(0, n_jobs, 1000):
                await noop.batch_defer_async(*({} for _ in range(min(1000, n_jobs - start))))

    asyncio.run(load())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("vacuum analyze")
    return LOADED


def worker_child(barrier, url: str, seconds: float, concurrency: int = 1) -> dict:
    app, _noop = make_app(url, max_size=max(4, concurrency + 2))
    counting.install()

    async def main() -> dict:
        async with app.open_async():
            barrier.wait(60)
            start = counting.count()
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(
                    app.run_worker_async(wait=False, concurrency=concurrency,
                                         listen_notify=False, install_signal_handlers=False,
                                         delete_jobs="never"),
                    timeout=seconds)
            except TimeoutError:
                pass
            return {"count": 0, "t0": t0, "t1": time.monotonic(),
                    "statements": counting.count() - start}

    return asyncio.run(main())


def run_workers(workers: int, seconds: float, loaded: str = LOADED,
                concurrency: int = 1) -> dict:
    url = common.create_db(RUN_DB, template=loaded)
    try:
        results = common.run_processes(worker_child, [(url, seconds, concurrency)] * workers,
                                       timeout=seconds + 120)
        out = common.combine(results)
        with psycopg.connect(url) as conn:
            done = conn.execute(
                "select count(*) from procrastinate_jobs where status = 'succeeded'"
            ).fetchone()[0]
        out["count"] = done
        out["rate"] = done / out["elapsed"]
        out["statements_per_item"] = (sum(r["statements"] for r in results) / done
                                      if done else None)
        return out
    finally:
        common.drop_db(RUN_DB)


SLEEP_LOADED = common.PREFIX + "pc_sleep"


def build_sleep(n_jobs: int, seconds: float) -> str:
    """A copy of the schema template with ``n_jobs`` sleep jobs (the I/O-bound scenario)."""
    url = common.create_db(SLEEP_LOADED, template=TEMPLATE)
    app, _ = make_app(url)

    async def load() -> None:
        async with app.open_async():
            for start in range(0, n_jobs, 1000):
                k = min(1000, n_jobs - start)
                await app.bench_sleep.batch_defer_async(*({"seconds": seconds}
                                                          for _ in range(k)))

    asyncio.run(load())
    return SLEEP_LOADED


def defer_child(barrier, url: str, n: int, batch: int) -> dict:
    app, noop = make_app(url)
    counting.install()

    async def main() -> dict:
        async with app.open_async():
            await noop.defer_async()
            barrier.wait(60)
            start = counting.count()
            t0 = time.monotonic()
            for _ in range(n // batch):
                if batch == 1:
                    await noop.defer_async()
                else:
                    await noop.batch_defer_async(*({} for _ in range(batch)))
            return {"count": n // batch * batch, "t0": t0, "t1": time.monotonic(),
                    "statements": counting.count() - start}

    return asyncio.run(main())


def defer_rate(n: int, batch: int = 1) -> dict:
    """``defer_async`` (batch 1) or ``batch_defer_async`` of ``batch`` jobs, one process."""
    url = common.create_db(RUN_DB, template=LOADED)  # a queue with rows and statistics
    try:
        results = common.run_processes(defer_child, [(url, n, batch)], timeout=300)
        out = common.combine(results)
        out["statements_per_item"] = results[0]["statements"] / out["count"]
        return out
    finally:
        common.drop_db(RUN_DB)
