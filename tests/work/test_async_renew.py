"""``ctx.renew()`` is the executor's way to extend its lease (docs/work.md "Leases and
renewal"), but from an ``async def`` executor it is a synchronous database call on the event
loop: Django refused it ("You cannot call this from an async context") and the attempt failed.
``await ctx.arenew()`` renews from async code, with the same caps and errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import SyncToAsync
from django.db import connection, connections

from durable_schedule.errors import LeaseLost
from durable_schedule.work.concurrency import shutdown_pool
from tests.work.conftest import run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_pool():
    yield
    shutdown_pool()
    # The async executors' ORM thread (sync_to_async) keeps its connection otherwise.
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)


def _accept(d):
    return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id


@pytest.mark.parametrize("concurrency", [1, 2])
def test_async_executor__arenew_extends_its_lease(committed_clock, define, concurrency):
    d = define(f"test.arenew_{concurrency}")
    seen = []

    @d.executor
    async def run(ctx, payload):
        from asgiref.sync import sync_to_async

        before = ctx.lease_expires_at
        await sync_to_async(committed_clock.advance)(timedelta(seconds=10))
        seen.append((before, await ctx.arenew(), ctx.lease_expires_at))
        return {"ok": 1}

    work_id = _accept(d)
    assert run_pass(concurrency=concurrency).succeeded == 1
    [(before, renewed, after)] = seen
    assert renewed == after and renewed > before
    assert work_row(work_id, "state") == ("succeeded",)


def test_async_executor__arenew_raises_lease_lost_when_taken_over(committed_clock, define):
    d = define("test.arenew_lost")
    raised = []

    @d.executor
    async def run(ctx, payload):
        from asgiref.sync import sync_to_async

        def take_over() -> None:
            with connection.cursor() as cur:
                cur.execute("update durable_work set lease_generation = lease_generation + 1"
                            " where work_id = %s", [ctx.work_id])
        await sync_to_async(take_over)()
        try:
            await ctx.arenew()
        except LeaseLost as exc:
            raised.append((exc.code, ctx.cancelled.is_set()))
            raise
        return {"ok": 1}

    _accept(d)
    run_pass()
    assert raised == [("DS211", True)]
