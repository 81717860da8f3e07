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

from bench import common

TEMPLATE = common.PREFIX + "pc"
LOADED = common.PREFIX + "pc_jobs"
RUN_DB = common.PREFIX + "pc_run"
TASK = "bench_noop"


def make_app(url: str):
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=4)
    )

    @app.task(name=TASK)
    def noop() -> None:
        return None

    return app, noop


def build(n_jobs: int) -> str:
    """``ds_bench_pc``: Procrastinate's schema only; ``ds_bench_pc_jobs``: plus n no-op jobs."""
    url = common.create_db(TEMPLATE)
    app, noop = make_app(url)

    async def schema() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    asyncio.run(schema())
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


def worker_child(barrier, url: str, seconds: float) -> dict:
    app, _noop = make_app(url)

    async def main() -> dict:
        async with app.open_async():
            barrier.wait(60)
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(
                    app.run_worker_async(wait=False, concurrency=1, listen_notify=False,
                                         install_signal_handlers=False, delete_jobs="never"),
                    timeout=seconds)
            except TimeoutError:
                pass
            return {"count": 0, "t0": t0, "t1": time.monotonic()}

    return asyncio.run(main())


def run_workers(workers: int, seconds: float) -> dict:
    url = common.create_db(RUN_DB, template=LOADED)
    try:
        results = common.run_processes(worker_child, [(url, seconds)] * workers,
                                       timeout=seconds + 120)
        out = common.combine(results)
        with psycopg.connect(url) as conn:
            done = conn.execute(
                "select count(*) from procrastinate_jobs where status = 'succeeded'"
            ).fetchone()[0]
        out["count"] = done
        out["rate"] = done / out["elapsed"]
        return out
    finally:
        common.drop_db(RUN_DB)


def defer_child(barrier, url: str, n: int) -> dict:
    app, noop = make_app(url)

    async def main() -> dict:
        async with app.open_async():
            await noop.defer_async()
            barrier.wait(60)
            t0 = time.monotonic()
            for _ in range(n):
                await noop.defer_async()
            return {"count": n, "t0": t0, "t1": time.monotonic()}

    return asyncio.run(main())


def defer_rate(n: int) -> dict:
    url = common.create_db(RUN_DB, template=TEMPLATE)
    try:
        return common.combine(common.run_processes(defer_child, [(url, n)], timeout=300))
    finally:
        common.drop_db(RUN_DB)
