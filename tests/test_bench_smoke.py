"""Smoke test of the benchmark harness (issue 8): the smallest raw-ceiling configuration runs
against the test database in well under a second and materializes exactly the due set.

It pins what the raw ceiling must do to be a fair reference for ``process_due``: one occurrence
with its Work link, one Work and one Work dispatch row per due schedule, the cursor moved to the
instant and the lease released with the next due time — and nothing left to claim.
"""

from __future__ import annotations

import psycopg
import pytest

from bench import common, schedules, seed

pytestmark = pytest.mark.django_db(transaction=True)

DUE = 30


def _count(conn: psycopg.Connection, sql: str) -> int:
    return conn.execute(sql).fetchone()[0]


@pytest.mark.parametrize("batch, batched_write", [(1, False), (10, False), (10, True)])
def test_raw_ceiling__materializes_every_due_schedule_once(committed_clock, pg_factory, batch,
                                                           batched_write):
    conn = pg_factory(autocommit=True)
    committed_clock.set(seed.T0)
    seed.synthetic_prototype(conn, "proto-due", seed.DUE_INTERVAL)
    seed.replicate(conn, "proto-due", "s", DUE)
    seed.drop_prototypes(conn, ["proto-due"])
    committed_clock.set(seed.T_RUN)

    queries = common.queries("raw.sql")
    done, claims = schedules.materialize_raw(conn, queries, "bench-smoke", batch, batched_write,
                                             seconds=30.0, limit=10 * DUE)

    assert done == DUE
    assert claims == -(-DUE // batch) + 1  # the last claim finds nothing due
    assert _count(conn, "select count(*) from durable_schedule_occurrence"
                        " where state = 'materialized' and work_id is not null") == DUE
    assert _count(conn, "select count(*) from durable_work where state = 'pending'") == DUE
    assert _count(conn, "select count(*) from durable_work_dispatch") == DUE
    assert _count(conn, "select count(*) from durable_schedule_definition"
                        f" where cursor_utc = '{(seed.T0 + seed.DUE_INTERVAL).isoformat()}'") \
        == DUE
    assert _count(conn, "select count(*) from durable_schedule_dispatch"
                        " where lease_owner is null and due_at ="
                        f" '{(seed.T0 + 2 * seed.DUE_INTERVAL).isoformat()}'") == DUE
    again, _ = schedules.materialize_raw(conn, queries, "bench-smoke", batch, batched_write,
                                         seconds=30.0, limit=10 * DUE)
    assert again == 0


def test_statement_counter__counts_each_cursor_call_once(pg_factory):
    from bench import counting

    conn = pg_factory(autocommit=True)
    counting.install()
    counting.install()  # idempotent: a second install must not double-count
    start = counting.count()
    conn.execute("select 1")
    with conn.cursor() as cur:
        cur.execute("select 2")
        cur.executemany("select %s", [(1,), (2,)])
    assert counting.count() - start == 3


def test_report__acceptance_ratios_are_computed_within_each_round():
    from bench import report

    rows = [{"impl": impl, "batch": batch, "round": rnd, "rate": rate}
            for rnd, rates in enumerate([(100, 1500, 80), (200, 2200, 250)])
            for impl, batch, rate in (("ours", 1, rates[0]), ("ours", 100, rates[1]),
                                      ("procrastinate", 1, rates[2]))]
    s = report.summarize({"enqueue": rows})
    assert s["many_vs_single"]["median"] == (15.0 + 11.0) / 2
    assert s["enqueue_vs_peer"]["1"]["min"] == 0.8 and s["enqueue_vs_peer"]["1"]["max"] == 1.25
    assert "enqueue_many(100) / enqueue >= 10: met" in "\n".join(report.targets(s))


def test_report__acceptance_targets_compare_standalone_and_print_the_atomic_form_beside():
    from bench import report

    rows = [{"impl": impl, "batch": batch, "round": 0, "rate": rate}
            for impl, batch, rate in (("ours", 1, 1000), ("ours", 100, 12000),
                                      ("ours_atomic", 1, 520), ("ours_atomic", 100, 4160),
                                      ("procrastinate", 1, 800))]
    s = report.summarize({"enqueue": rows})
    assert s["enqueue_vs_peer"]["1"]["median"] == 1000 / 800
    assert s["enqueue_atomic_vs_peer"]["1"]["median"] == 520 / 800
    assert s["many_vs_single"]["median"] == 12.0
    assert s["many_vs_single_atomic"]["median"] == 8.0
    assert s["enqueue_atomic_vs_standalone"]["100"]["median"] == 4160 / 12000
    targets = "\n".join(report.targets(s))
    assert "enqueue_many(100) / enqueue >= 10: met (standalone, median 12.0; inside " \
           "transaction.atomic(): median 8.0)" in targets
    assert "defer >= 1.0: met (standalone, median 1.25; inside transaction.atomic(): " \
           "median 0.65)" in targets
    table = report.table({"enqueue": rows}, s)
    assert "| 1 | 1,000 (1,000–1,000) | 520 (520–520) | 800 (800–800) |" in table
    assert "in `atomic()` / standalone: batch 1 0.52 (0.52–0.52), batch 100 0.35" in table
