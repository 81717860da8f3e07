"""A ``statement_timeout`` set on the database (as an operator sets it on a role or database) of
50 ms leaves ``process_work --loop --concurrency 4`` untouched: no runner statement on a small
store comes near it, so no pass needs a transient retry, every item runs once and SIGTERM exits
0. (A statement that does time out is 57014, retried; tests/runner/test_transient_timeouts.py.)"""

from __future__ import annotations

import pytest
from demo import pipeline_targets
from django.db import connection

from tests.runner.loophelpers import sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


@pytest.fixture
def short_statement_timeout():
    connection.ensure_connection()  # this process keeps the old default
    [(db,)] = sql("select current_database()")
    sql(f"alter database \"{db}\" set statement_timeout = '50ms'")
    try:
        yield
    finally:
        sql(f'alter database "{db}" reset statement_timeout')


def test_statement_timeout_50ms__a_concurrent_loop_runs_every_item_once(short_statement_timeout):
    [(setting,)] = sql("show statement_timeout")
    assert setting == "50ms"  # the runner's sessions get it too
    proc = start_loop("process_work", "--concurrency", "4", "--batch", "10")
    try:
        for n in range(8):
            pipeline_targets.marked_slow.enqueue(
                scope="tenant-a",
                command=f"c-{n}",
                idempotency_key=f"k-{n}",
                payload={"seconds": 0.1},
            )
        wait_until(
            lambda: (
                proc.poll() is not None
                or sql("select count(*) from durable_work where state = 'succeeded'")[0][0] == 8
            ),
            what="every item to run (or the loop to exit)",
        )
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert "transient database error" not in out, out
    assert sql("select count(*) from durable_work where state = 'succeeded'") == [(8,)], out
    assert sql("select count(*) from demo_effect where key = 'started'") == [(8,)], out
    assert sql("select count(*) from durable_work_dispatch") == [(0,)]
