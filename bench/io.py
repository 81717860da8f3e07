"""Scenario: I/O-bound Work, each item sleeps 50 ms (an HTTP call, an e-mail), one worker
process at ``--concurrency 20``, ours against Procrastinate at ``concurrency=20``.

With one item at a time a process does at most 1 / 50 ms = 20 items/s; 20 at a time bound it
at 400/s. Ours runs the real ``manage.py process_work --concurrency 20 --max-items N`` through
``call_command`` in a child process (the sleep definition registered there, as a user's
``<app>/work.py`` is by autodiscovery); the option is detected at run time and, where this
checkout's ``process_work`` lacks it, the row says "not available" -- nothing is measured in
its place. The Work is accepted with ``enqueue_many`` into a template database on the real
clock; Procrastinate's jobs with ``batch_defer``. Rate = items in ``succeeded`` (counted in the
database) over the wall time of the run.
"""

from __future__ import annotations

import time

import psycopg

from bench import common, counting, peer, seed

SLEEP_S = 0.05
CONCURRENCY = 20
LOADED = common.PREFIX + "io"
RUN_DB = common.PREFIX + "io_run"


def available() -> bool:
    """Whether ``process_work --concurrency`` exists here (checked in a child: Django)."""
    url = common.db_url(common.TEMPLATE_DB)
    return common.run_processes(_available_child, [(url,)], timeout=120)[0]["available"]


def _available_child(barrier, url: str) -> dict:
    common.setup_django(url)
    from bench import ours

    barrier.wait(60)
    return {"count": 0, "t0": 0.0, "t1": 0.0, "available": ours.concurrency_option()}


def _load_child(barrier, url: str, n: int) -> dict:
    common.setup_django(url)
    from bench import ours
    from durable_schedule import work

    d = ours.sleep_definition(SLEEP_S)
    barrier.wait(60)
    for start in range(0, n, 500):
        work.enqueue_many(seed.SCOPE, [
            d.request(command=f"io-{i}", idempotency_key="io", payload={"seconds": SLEEP_S})
            for i in range(start, min(n, start + 500))])
    return {"count": n, "t0": 0.0, "t1": 0.0}


def build(n: int) -> str:
    url = common.create_db(LOADED, template=common.TEMPLATE_DB)
    common.run_processes(_load_child, [(url, n)], timeout=300)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("vacuum analyze")
    return LOADED


def _run_child(barrier, url: str, n: int) -> dict:
    common.setup_django(url)
    from django.core.management import call_command

    from bench import ours

    ours.sleep_definition(SLEEP_S)
    counting.install()
    barrier.wait(60)
    start = counting.count()
    t0 = time.monotonic()
    call_command("process_work", "--concurrency", str(CONCURRENCY), "--max-items", str(n),
                 "--lease-owner", "bench-io", verbosity=0)
    return {"count": 0, "t0": t0, "t1": time.monotonic(),
            "statements": counting.count() - start}


def run_ours(n: int) -> dict:
    url = common.create_db(RUN_DB, template=LOADED)
    try:
        results = common.run_processes(_run_child, [(url, n)], timeout=180)
        out = common.combine(results)
        with psycopg.connect(url) as conn:
            done = conn.execute(
                "select count(*) from durable_work where state = 'succeeded'").fetchone()[0]
        out.update(count=done, rate=done / out["elapsed"],
                   statements_per_item=results[0]["statements"] / done if done else None)
        return out
    finally:
        common.drop_db(RUN_DB)


def build_peer(n: int) -> str:
    return peer.build_sleep(n, SLEEP_S)


def run_peer(seconds: float) -> dict:
    return peer.run_workers(1, seconds, loaded=peer.SLEEP_LOADED, concurrency=CONCURRENCY)
