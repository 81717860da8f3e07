"""Scenario 3: pass cost must not grow with idle schedules (docs/protocol/index.md "Quality bars",
docs/benchmarks.md).

For each total (1k, 100k, 1M) a database (all loaded first, so rounds interleave the totals and
drift of a shared machine hits them alike) holds 1,000 due Every(1 h) schedules and total - 1,000
idle Every(30 days) ones (due a month later), bulk-loaded as the owner with INSERT ... SELECT
generate_series, then VACUUM ANALYZE. Measured on a fresh copy per implementation:

* claim cost: ``claim_schedule_dispatch(owner, 60 s, 100)`` in a transaction that is rolled back
  (so the due set stays), repeated; median milliseconds;
* pass cost: passes of 100 schedules (``process_due(max_schedules=100)``, and the raw shape)
  until the 1,000 due ones are done; median milliseconds per pass;
* ``EXPLAIN`` of the claim as the function runs it (auto_explain of the nested statement).
"""

from __future__ import annotations

import statistics
import time

import psycopg

from bench import common, schedules, seed

RUN_DB = common.PREFIX + "scale_run"


def loaded_db(total: int) -> str:
    return f"{common.PREFIX}scale_{total}"
DUE = 1_000
PASS_SIZE = 100
CLAIM_REPEATS = 30


def build(total: int) -> str:
    url = common.create_db(loaded_db(total), template=seed.PROTO_DB)
    with psycopg.connect(url) as conn:
        seed.replicate(conn, "proto-due", "d", DUE)
        if total > DUE:
            seed.replicate(conn, "proto-idle", "i", total - DUE)
        seed.drop_all_prototypes(conn)
        seed.history(conn, 10_000)
        common.set_clock(conn, seed.T_RUN)
        conn.autocommit = True
        conn.execute("vacuum analyze")
    return loaded_db(total)


def clone(total: int) -> str:
    """A fresh copy of the loaded database (FILE_COPY: a checkpoint and a file copy, much
    faster than WAL-logging a million rows again)."""
    common.drop_db(RUN_DB)
    with common.admin_connect() as conn:
        conn.execute(f'CREATE DATABASE "{RUN_DB}" TEMPLATE "{loaded_db(total)}"'
                     " STRATEGY = FILE_COPY")
    return common.db_url(RUN_DB)


def claim_cost_ms(conn: psycopg.Connection) -> float:
    """Median milliseconds of one claim of up to 100 rows; every claim is rolled back."""
    times = []
    conn.autocommit = False
    for _ in range(CLAIM_REPEATS):
        t = time.perf_counter()
        rows = conn.execute("select * from claim_schedule_dispatch('bench-scale', "
                            "interval '60 seconds', %s)", [PASS_SIZE]).fetchall()
        times.append((time.perf_counter() - t) * 1000)
        conn.rollback()
        if len(rows) != PASS_SIZE:
            raise RuntimeError(f"claim returned {len(rows)} rows, expected {PASS_SIZE}")
    conn.autocommit = True
    conn.execute("vacuum durable_schedule_dispatch")
    return statistics.median(times)


def explain_claim(conn: psycopg.Connection) -> list[str]:
    """The plan of the claim function's UPDATE, as auto_explain logs it to this client."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.autocommit = False
    try:
        conn.execute("load 'auto_explain'")
        conn.execute("set local auto_explain.log_min_duration = 0")
        conn.execute("set local auto_explain.log_nested_statements = on")
        conn.execute("set local auto_explain.log_analyze = on")
        conn.execute("set local auto_explain.log_buffers = on")
        conn.execute("set local auto_explain.log_timing = off")
        conn.execute("set local client_min_messages = log")
        conn.execute("select * from claim_schedule_dispatch('bench-explain', "
                     "interval '60 seconds', %s)", [PASS_SIZE]).fetchall()
    finally:
        conn.rollback()
        conn.autocommit = True
    plans = [n for n in notices if "durable_schedule_dispatch" in n and "Query Text" in n]
    text = plans[-1] if plans else "\n".join(notices)
    return [line for line in text.splitlines() if line.strip()]


def _raw_passes(url: str) -> list[float]:
    q = common.queries("raw.sql")
    times = []
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(DUE // PASS_SIZE + 1):
            t = time.perf_counter()
            n, _claims = schedules.materialize_raw(conn, q, "bench-scale", PASS_SIZE, False,
                                                   60.0, PASS_SIZE)
            if n == 0:
                break
            times.append((time.perf_counter() - t) * 1000)
    return times


def ours_passes_child(barrier, url: str) -> dict:
    common.setup_django(url)
    from datetime import timedelta

    from django.db import connection

    from bench import ours

    process_due = ours.process_due_fn()
    connection.ensure_connection()
    barrier.wait(60)
    times = []
    count = 0
    t0 = time.monotonic()
    for _ in range(DUE // PASS_SIZE + 1):
        t = time.perf_counter()
        result = process_due(max_schedules=PASS_SIZE, lease_owner="bench-scale",
                             lease_duration=timedelta(seconds=60))
        if ours.claimed(result) == 0:
            break
        times.append((time.perf_counter() - t) * 1000)
        count += ours.materialized(result)
    return {"count": count, "t0": t0, "t1": time.monotonic(), "times": times}


def measure(impl: str, total: int) -> dict:
    """One fresh copy of the loaded database: claim cost, then passes of ``impl``."""
    url = clone(total)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            claim_ms = claim_cost_ms(conn)
            scans = [line.strip() for line in explain_claim(conn) if "Scan" in line]
        if impl == "ours":
            res = common.run_processes(ours_passes_child, [(url,)], timeout=300)[0]
            times, count = res["times"], res["count"]
        else:
            times = _raw_passes(url)
            count = None
        return {"claim_ms": claim_ms, "pass_ms": statistics.median(times) if times else None,
                "passes": len(times), "count": count, "claim_scans": scans}
    finally:
        common.drop_db(RUN_DB)


def explain(total: int) -> list[str]:
    url = clone(total)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            return explain_claim(conn)
    finally:
        common.drop_db(RUN_DB)
