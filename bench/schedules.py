"""Scenario 1 + 2: schedule materialization throughput, ours (``process_due``) against the raw
ceiling (the same two-transaction shape hand-written in psycopg), in the same run.

10,000 Every(1 h) schedules are due once (clock frozen one second after their first instant).
Each configuration (implementation x processes x ``max_schedules``) gets a fresh copy of the
seeded database; its processes start together behind a barrier and pass until nothing is due or
the time cap is reached. Rate = occurrences (each with its Work) per second of wall time.

Raw shapes (both two transactions per claim, all statements autocommit, one round trip each):
* ``raw``          claim N rows in one statement; then one transaction per schedule — the
                   protocol's shape (one scoped transaction per claimed schedule);
* ``raw_batched``  claim N; write all N in one statement/transaction — what a batched processor
                   could reach (docs/benchmarks.md: the protocol allows it within one scope).
"""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg

from bench import common, seed

SEEDED_DB = common.PREFIX + "sched"
CRON_DB = common.PREFIX + "sched_cron"
RUN_DB = common.PREFIX + "sched_run"
LEASE = "60 seconds"


def build_template(n_due: int, prototype: str = "proto-due", name: str = SEEDED_DB) -> str:
    """Copy the prototype database and load ``n_due`` due copies of ``prototype`` into it
    (Every by default; ``seed.CRON_PROTOTYPE`` for the cron variant, into ``CRON_DB``)."""
    url = common.create_db(name, template=seed.PROTO_DB)
    with psycopg.connect(url) as conn:
        seed.replicate(conn, prototype, "s", n_due)
        seed.drop_all_prototypes(conn)
        seed.history(conn, max(n_due, 10_000))
        common.set_clock(conn, seed.T_RUN)
        conn.autocommit = True
        conn.execute("vacuum analyze")
    _BASE.clear()
    return name


#: Rows the seeded database holds before a run (history), subtracted when verifying.
_BASE: list[int] = []


def _base() -> list[int]:
    if not _BASE:
        with psycopg.connect(common.db_url(SEEDED_DB)) as conn:
            _BASE.extend(_counts(conn))
    return _BASE


def _counts(conn: psycopg.Connection) -> tuple[int, int, int]:
    return conn.execute(
        "select (select count(*) from durable_schedule_occurrence),"
        " (select count(*) from durable_work),"
        " (select count(*) from durable_work_dispatch)").fetchone()


# ----------------------------------------------------------------- children
def raw_child(barrier, url: str, owner: str, batch: int, batched_write: bool,
              seconds: float, limit: int) -> dict:
    q = common.queries("raw.sql")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select 1")
        barrier.wait(60)
        t0 = time.monotonic()
        count, claims = materialize_raw(conn, q, owner, batch, batched_write, seconds, limit)
        t1 = time.monotonic()
    return {"count": count, "t0": t0, "t1": t1, "claims": claims}


def materialize_raw(conn: psycopg.Connection, q: dict, owner: str, batch: int,
                    batched_write: bool, seconds: float, limit: int) -> tuple[int, int]:
    """The raw loop (also used by the smoke test): returns (schedules materialized, claims)."""
    deadline = time.monotonic() + seconds
    count = claims = 0
    while count < limit and time.monotonic() < deadline:
        rows = conn.execute(q["claim_schedules"],
                            {"owner": owner, "lease": LEASE, "n": batch}).fetchall()
        claims += 1
        if not rows:
            break
        groups = [rows] if batched_write else [[r] for r in rows]
        for g in groups:
            cur = conn.execute(q["materialize"], {
                "rids": [r[0] for r in g], "sids": [r[1] for r in g],
                "revs": [r[2] for r in g], "owner": owner})
            if cur.rowcount != len(g):
                raise RuntimeError(f"raw materialize released {cur.rowcount} of {len(g)} leases")
            count += len(g)
    return count, claims


def ours_child(barrier, url: str, owner: str, batch: int, seconds: float, limit: int) -> dict:
    common.setup_django(url)
    from bench import ours

    process_due = ours.process_due_fn()
    from django.db import connection

    connection.ensure_connection()
    statements = ours.StatementCounter()
    barrier.wait(120)
    t0 = time.monotonic()
    deadline = t0 + seconds
    count = passes = 0
    with connection.execute_wrapper(statements):
        while count < limit and time.monotonic() < deadline:
            result = process_due(max_schedules=batch, lease_owner=owner,
                                 lease_duration=timedelta(seconds=60))
            passes += 1
            n = ours.materialized(result)
            if ours.claimed(result) == 0:
                break
            count += n
    t1 = time.monotonic()
    return {"count": count, "t0": t0, "t1": t1, "claims": passes,
            "statements": statements.count}


# ----------------------------------------------------------------- one configuration
def run_config(impl: str, procs: int, batch: int, seconds: float, limit: int,
               template: str = SEEDED_DB) -> dict:
    """Fresh copy of the seeded database, ``procs`` processes of ``impl``; verified counts."""
    url = common.create_db(RUN_DB, template=template)
    try:
        per = [(url, f"bench-{impl}-{i}", batch) for i in range(procs)]
        if impl == "ours":
            args = [(u, o, b, seconds, limit) for u, o, b in per]
            results = common.run_processes(ours_child, args, timeout=seconds + 180)
        else:
            args = [(u, o, b, impl == "raw_batched", seconds, limit) for u, o, b in per]
            results = common.run_processes(raw_child, args, timeout=seconds + 120)
        out = common.combine(results)
        if impl == "ours":
            statements = sum(r["statements"] for r in results)
        else:  # one claim statement per claim, one write statement per schedule or batch
            writes = out["count"] if impl == "raw" else -(-out["count"] // batch)
            statements = sum(r["claims"] for r in results) + writes
        out["statements_per_item"] = statements / out["count"] if out["count"] else None
        with psycopg.connect(url) as conn:
            occ, work, wdisp = _counts(conn)
        base = _base()
        occ, work, wdisp = occ - base[0], work - base[1], wdisp - base[2]
        out["verified"] = occ == work == wdisp == out["count"]
        out["db_counts"] = {"occurrences": occ, "work": work, "work_dispatch": wdisp}
        if not out["verified"]:
            common.log(f"schedule {impl} p{procs} b{batch}: counted {out['count']} but the "
                       f"database holds {out['db_counts']}")
        return out
    finally:
        common.drop_db(RUN_DB)
