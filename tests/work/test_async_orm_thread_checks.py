"""The thread an async executor's ORM calls run on (``sync_to_async``, thread-sensitive: one
asgiref thread that serves no requests) checks its connections before each job, as a
``--concurrency`` slot thread does (docs/operations.md "Failover and database outages"): with
Django's ``CONN_HEALTH_CHECKS`` on, and after a connection loss the runner noted, a connection
the server cut between two jobs (``pg_terminate_backend``) is replaced before the next job's
first query, so that attempt does not fail. Before, the first attempt after the cut failed on
the dead connection (and only its failure closed it)."""

from __future__ import annotations

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.db import connection, connections

from durable_schedule.work import codec
from durable_schedule.work.broken_connections import note_connection_loss
from durable_schedule.work.concurrency import shutdown_pool
from tests.work.conftest import rows, run_pass

pytestmark = pytest.mark.django_db(transaction=True)


def close_orm_thread_connections() -> None:
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)


@pytest.fixture
def health_checks():
    """Set ``CONN_HEALTH_CHECKS`` (read when a connection opens) for the test, with the async
    executors' ORM thread starting without a connection."""
    settings = connections["default"].settings_dict
    old = settings["CONN_HEALTH_CHECKS"]

    def set_checks(on: bool) -> None:
        settings["CONN_HEALTH_CHECKS"] = on

    shutdown_pool()
    close_orm_thread_connections()
    yield set_checks
    settings["CONN_HEALTH_CHECKS"] = old
    shutdown_pool()
    close_orm_thread_connections()


def backend_pid() -> int:
    with connection.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        return cur.fetchone()[0]


@pytest.mark.parametrize("cause", ["health_checks", "noted_loss"])
@pytest.mark.parametrize("concurrency", [1, 2])
def test_async_orm_thread__a_connection_cut_between_jobs_is_replaced_before_the_next(
        committed_clock, define, health_checks, cause, concurrency):
    health_checks(cause == "health_checks")
    d = define("t.async_orm_checks")

    @d.executor
    async def run(ctx, payload):
        return {"pid": await sync_to_async(backend_pid)()}

    d.enqueue(scope="tenant-a", command="c", idempotency_key="k1", payload={})
    assert run_pass(concurrency=concurrency).succeeded == 1
    (result,) = rows("select result from durable_work where state = 'succeeded'")[0]
    killed = codec.loads(result)["pid"]
    # The server cuts the ORM thread's backend while no job runs (a restart, a failover).
    assert rows("select pg_terminate_backend(%s)", (killed,)) == [(True,)]
    if cause == "noted_loss":
        # What the runner does when its own connection was cut by the same restart.
        note_connection_loss()

    d.enqueue(scope="tenant-a", command="c", idempotency_key="k2", payload={})
    counts = run_pass(concurrency=concurrency)
    assert (counts.succeeded, counts.retried) == (1, 0), counts
    pids = {codec.loads(r)["pid"] for (r,) in rows(
        "select result from durable_work where state = 'succeeded'")}
    assert len(pids) == 2 and killed in pids  # the second job ran on a new backend
