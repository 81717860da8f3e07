"""A ``--concurrency`` slot thread whose database connection died (a failover, a restarted
pooler, ``pg_terminate_backend``) reconnects before its next job. Before the fix nothing closed
it: Django only drops broken connections at a request's boundary, which a pool thread never
has, so every later attempt on that slot whose executor used the database failed ("the
connection is closed") for the life of the worker process, burning the Work's attempts."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.db import connection, connections

from durable_schedule.work import codec
from durable_schedule.work.concurrency import _the_pool, shutdown_pool
from tests.work.conftest import rows, run_pass

pytestmark = pytest.mark.django_db(transaction=True)

SLOTS = 2


@pytest.fixture(autouse=True)
def _fresh_pool():
    shutdown_pool()
    yield
    shutdown_pool()
    # the thread sync_to_async uses from the event loop keeps its connection: close it too
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)


def backend_pid() -> int:
    with connection.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        return cur.fetchone()[0]


def connect_every_slot() -> list[int]:
    """Each slot thread opens its connection (one job per thread: they meet at a barrier)."""
    pool = _the_pool(SLOTS)
    meet = threading.Barrier(SLOTS, timeout=30)
    pids: list[int] = []
    done = threading.Semaphore(0)

    def job():
        try:
            pids.append(backend_pid())
            meet.wait()
        finally:
            done.release()

    for _ in range(SLOTS):
        pool.submit(job)
    for _ in range(SLOTS):
        assert done.acquire(timeout=30)
    assert len(set(pids)) == SLOTS
    return pids


def test_slot__reconnects_after_its_connection_was_terminated(committed_clock, define):
    d = define("t.uses_orm")

    @d.executor
    def run(ctx, payload):
        return {"pid": backend_pid()}

    killed = connect_every_slot()
    assert rows("select count(*) filter (where pg_terminate_backend(pid)) from"
                " pg_stat_activity where pid = any(%s)", (killed,)) == [(SLOTS,)]
    for i in range(6):
        d.enqueue(scope="tenant-a", command="c", idempotency_key=f"k{i}", payload={})
    counts = run_pass(concurrency=SLOTS)
    # At most the first database use of each slot meets its dead connection (that attempt
    # fails and is retried under the policy); every later one reconnects.
    assert counts.admitted == 6
    assert counts.retried <= SLOTS and counts.succeeded >= 6 - SLOTS
    used = {codec.loads(result)["pid"] for (result,) in rows(
        "select result from durable_work where state = 'succeeded'")}
    assert not used & set(killed)


@pytest.mark.parametrize("concurrency", [1, 2])
def test_async_executor__its_sync_to_async_thread_reconnects(committed_clock, define,
                                                             concurrency):
    # An async executor's ORM calls run (sync_to_async, thread-sensitive) on one asgiref thread
    # that serves no requests either: before the fix, 5 of 5 attempts after its backend was
    # terminated failed.
    d = define("t.async_uses_orm")

    @d.executor
    async def run(ctx, payload):
        return {"pid": await sync_to_async(backend_pid)()}

    d.enqueue(scope="tenant-a", command="c", idempotency_key="k0", payload={})
    assert run_pass(concurrency=concurrency).succeeded == 1
    (result,) = rows("select result from durable_work where state = 'succeeded'")[0]
    killed = codec.loads(result)["pid"]
    assert rows("select pg_terminate_backend(%s)", (killed,)) == [(True,)]
    for i in range(1, 6):
        d.enqueue(scope="tenant-a", command="c", idempotency_key=f"k{i}", payload={})
    counts = run_pass(concurrency=concurrency)
    # The attempts already waiting on that thread when the first one failed meet the dead
    # connection too: at most one per slot; every later one reconnects.
    assert counts.admitted == 5
    assert counts.retried <= concurrency and counts.succeeded >= 5 - concurrency
