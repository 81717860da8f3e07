"""Scenario 4: Work throughput with a no-op executor, and the enqueue rate.

20,000 pending no-op Work items: one prototype accepted through the public ``enqueue`` and
copied with INSERT ... SELECT generate_series (only the identity differs), plus the store
history every scenario carries. Each run gets a fresh copy and 1/2/4 worker processes calling
the bounded Work pass (largest claim ``BATCH``, the runtime's default maximum) until nothing
is due or the time cap is reached. Rate = Work items that reached ``succeeded`` per second of
wall time (counted in the database, not by the workers).
The enqueue rate is ``enqueue`` / ``enqueue_many`` one call per transaction, one process, in two
forms: standalone (no atomic block, one autocommit statement, like the peers' calls) and inside
``transaction.atomic()`` (docs/benchmarks.md Method, "6. Acceptance").
"""

from __future__ import annotations

import os
import time

import psycopg

from bench import common, counting, seed
from durable_schedule.work.sizing import DEFAULT_MAX_BATCH

#: The largest claim of ours, passed explicitly (default: the runtime's default maximum,
#: imported, not copied) so that pgqueuer's ``batch_size`` (bench/pgq.py), also a maximum per
#: dequeue, is the same number by construction: "equal batch size". ``python -m bench
#: --work-batch N`` sets it for both (read by the spawned children too).
BATCH = int(os.environ.get("BENCH_WORK_BATCH", str(DEFAULT_MAX_BATCH)))
LOADED = common.PREFIX + "work"
RUN_DB = common.PREFIX + "work_run"


def build(n_work: int) -> str:
    """Copy the prototype database; ``n_work`` copies of the prototype Work, clock frozen one
    second after the schedules' first instant (the Work is due since T0)."""
    url = common.create_db(LOADED, template=seed.PROTO_DB)
    q = common.queries("work.sql")
    with psycopg.connect(url) as conn:
        conn.execute("set session_replication_role = replica")
        conn.execute(q["replicate_work"], {"command": seed.PROTO_WORK, "n": n_work})
        conn.execute("set session_replication_role = origin")
        conn.commit()
        seed.drop_all_prototypes(conn)
        seed.history(conn, 10_000)
        common.set_clock(conn, seed.T_RUN)
        conn.autocommit = True
        conn.execute("vacuum analyze")
    return LOADED


def worker_child(barrier, url: str, owner: str, max_items: int, seconds: float) -> dict:
    common.setup_django(url)
    from django.db import connection

    from bench import ours

    ours.noop_definition()
    work_pass = ours.work_pass_fn()
    connection.ensure_connection()
    counting.install()
    barrier.wait(120)
    start = counting.count()
    t0 = time.monotonic()
    deadline = t0 + seconds
    passes = 0
    while time.monotonic() < deadline:
        result = work_pass(max_items=max_items, lease_owner=owner, batch=BATCH)
        passes += 1
        if ours.work_claimed(result) == 0:
            break
    return {"count": 0, "t0": t0, "t1": time.monotonic(), "passes": passes,
            "statements": counting.count() - start}


def run_workers(workers: int, seconds: float, max_items: int = 100) -> dict:
    url = common.create_db(RUN_DB, template=LOADED)
    try:
        args = [(url, f"bench-worker-{i}", max_items, seconds) for i in range(workers)]
        results = common.run_processes(worker_child, args, timeout=seconds + 180)
        out = common.combine(results)
        statements = sum(r["statements"] for r in results)
        with psycopg.connect(url) as conn:
            started, succeeded = conn.execute(common.queries("work.sql")["started"]).fetchone()
            if started and not succeeded:
                error = conn.execute(common.queries("work.sql")["last_error"]).fetchone()
                raise RuntimeError(f"{started} Work started, none succeeded; e.g. {error}")
        out.update(count=succeeded, started=started, rate=succeeded / out["elapsed"],
                   statements_per_item=statements / started if started else None)
        return out
    finally:
        common.drop_db(RUN_DB)


def enqueue_child(barrier, url: str, n: int, batch: int, atomic: bool) -> dict:
    common.setup_django(url)
    from bench import ours

    ours.enqueue_one(seed.SCOPE, -1, atomic)
    if batch > 1:
        ours.enqueue_batch(seed.SCOPE, -1, 2, atomic)
    counting.install()
    barrier.wait(60)
    start = counting.count()
    t0 = time.monotonic()
    if batch == 1:
        for i in range(n):
            ours.enqueue_one(seed.SCOPE, i, atomic)
    else:
        for b in range(n // batch):
            ours.enqueue_batch(seed.SCOPE, b, batch, atomic)
    return {"count": n // batch * batch, "t0": t0, "t1": time.monotonic(),
            "statements": counting.count() - start}


def enqueue_rate(n: int, batch: int = 1, atomic: bool = False) -> dict:
    """``enqueue`` (batch 1) or ``enqueue_many`` of ``batch``, each call its own transaction:
    standalone (``atomic=False``, one autocommit statement) or inside ``transaction.atomic()``
    (``atomic=True``); one process, into a copy of the loaded Work database (a store
    with rows and statistics, not an empty one: docs/benchmarks.md "History"); counts checked
    in the database afterwards."""
    url = common.create_db(RUN_DB, template=LOADED)
    try:
        with psycopg.connect(url) as conn:
            stored_before = conn.execute("select count(*) from durable_work").fetchone()[0]
        before = counting.transactions(url)
        results = common.run_processes(enqueue_child, [(url, n, batch, atomic)],
                                       timeout=300)
        out = common.combine(results)
        with psycopg.connect(url) as conn:
            stored = conn.execute("select count(*) from durable_work").fetchone()[0]
        stored -= stored_before
        expected = out["count"] + (3 if batch > 1 else 1)  # the warm-up items
        if stored != expected:
            raise RuntimeError(f"{stored} Work stored, {expected} accepted")
        out["statements_per_item"] = results[0]["statements"] / out["count"]
        out["transactions_per_item"] = (counting.transactions(url) - before) / out["count"]
        return out
    finally:
        common.drop_db(RUN_DB)


def enqueue_atomic_rate(n: int, batch: int = 1) -> dict:
    """:func:`enqueue_rate` inside ``transaction.atomic()`` (the form with a business write)."""
    return enqueue_rate(n, batch, atomic=True)


def has_enqueue_many() -> bool:
    """Whether this checkout has ``work.enqueue_many`` (checked in a child: Django)."""
    url = common.db_url(common.TEMPLATE_DB)
    return common.run_processes(_enqueue_many_child, [(url,)], timeout=120)[0]["available"]


def _enqueue_many_child(barrier, url: str) -> dict:
    common.setup_django(url)
    from bench import ours

    barrier.wait(60)
    return {"count": 0, "t0": 0.0, "t1": 0.0, "available": ours.enqueue_many_fn() is not None}
