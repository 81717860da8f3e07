"""The acceptance statement's cursor is kept on its connection between calls
(store/transactions.py ``statement_cursor``; docs/benchmarks.md "Acceptance, fourth look"): the
same psycopg cursor serves consecutive calls, a replaced connection or another time zone gets a
new one, and the Django cursor wrapper around it still logs the statement, runs the
connection's execute wrappers and translates database errors."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from durable_schedule import work
from durable_schedule.store import transactions
from durable_schedule.store.transactions import statement_cursor
from durable_schedule.work.enqueue import WorkRequest

pytestmark = pytest.mark.django_db


def request(n: int) -> WorkRequest:
    return WorkRequest(command_id=f"cursor-{n}", idempotency_key="k", work_name="t.cursor",
                       work_version="v1", payload={"n": n}, provider_safety="idempotent")


def kept_raw():
    with statement_cursor() as cur:
        return cur.cursor._cur


def test_kept__consecutive_calls_share_one_psycopg_cursor(clock):
    first = kept_raw()
    work.enqueue("tenant-a", request(1))
    assert kept_raw() is first
    assert not first.closed  # closing the Django wrapper leaves it open


def test_kept__a_new_connection_gets_a_new_cursor(clock):
    first = kept_raw()
    stored = getattr(connection, transactions._KEPT)
    # As if the connection had been replaced: the kept cursor names another one.
    setattr(connection, transactions._KEPT, (object(), stored[1], stored[2]))
    second = kept_raw()
    assert second is not first
    assert getattr(connection, transactions._KEPT)[0] is connection.connection
    accepted = work.enqueue("tenant-a", request(2))
    assert accepted.created


def test_kept__another_time_zone_gets_a_new_cursor(clock):
    first = kept_raw()
    pg, _tz, held = getattr(connection, transactions._KEPT)
    setattr(connection, transactions._KEPT, (pg, object(), held))
    assert kept_raw() is not first


def test_kept__the_wrapper_logs_and_wraps_every_call(clock):
    seen: list[str] = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as queries, connection.execute_wrapper(wrapper):
        work.enqueue("tenant-a", request(3))
        work.enqueue("tenant-a", request(4))
    assert sum("durable_schedule_accept_work" in q["sql"] for q in queries.captured_queries) == 2
    assert sum("durable_schedule_accept_work" in s for s in seen) == 2


def test_kept__a_database_error_is_translated_and_the_cursor_still_works(clock):
    with pytest.raises(DatabaseError), transaction.atomic(), statement_cursor() as cur:
        cur.execute("select 1/0")
    with statement_cursor() as cur:
        cur.execute("select 2")
        assert cur.fetchone() == (2,)
    assert work.enqueue("tenant-a", request(5)).created


def test_kept__a_statement_run_while_the_kept_cursor_is_in_use_gets_its_own_cursor(clock):
    # An execute wrapper (or a logging handler of django.db.backends) that enqueues Work after
    # the acceptance statement ran, before the outer call fetched its rows: the inner call must
    # not run on the outer call's psycopg cursor, whose result it would replace and consume.
    inner: list = []

    def wrapper(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "durable_schedule_accept_work" in sql and not inner:
            inner.append(None)
            inner[0] = work.enqueue("tenant-a", request(7))
        return result

    with connection.execute_wrapper(wrapper):
        outer = work.enqueue("tenant-a", request(6))
    assert (outer.command_id, outer.created) == ("cursor-6", True)
    assert (inner[0].command_id, inner[0].created) == ("cursor-7", True)
    assert outer.work_id != inner[0].work_id
    # and the kept cursor is the one the next call uses again
    first = kept_raw()
    assert kept_raw() is first
