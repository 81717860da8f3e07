"""An executor (or reconciler) that leaves a transaction open on its thread's connection --
``transaction.set_autocommit(False)`` never turned back on, an ``atomic()`` entered and never
left -- must not swallow the worker's own transactions: with ``concurrency=1`` the executor runs
on the pipeline's connection, so the group commit of the batch's outcomes ran *inside* the
executor's transaction and was never committed (the pass reported ``succeeded=2`` while both
rows stayed ``running``, their permits unresolved). The runtime rolls the left-open transaction
back (it never commits what the executor did not commit), restores the connection, and fails
the attempt with DS285 (the retry policy decides)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, connections, transaction

from durable_schedule import work
from durable_schedule.work.concurrency import shutdown_pool
from tests.work.conftest import MIN, Crash, permits, rows, run_pass, work_row

RETRY = work.RetryPolicy(maximum_attempts=3, maximum_elapsed=timedelta(hours=1),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", (timedelta(0), 5 * MIN, 20 * MIN), 30 * MIN)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def side_table():
    with connection.cursor() as cur:
        cur.execute("create table if not exists rvexec_side (work_id text)")
        cur.execute("grant all on rvexec_side to public")
    yield
    with connection.cursor() as cur:
        cur.execute("drop table if exists rvexec_side")


@pytest.fixture(autouse=True)
def _fresh_pool():
    yield
    shutdown_pool()


def _discard(conn) -> None:
    """Forget a connection's left-open transaction (the test's own clean-up)."""
    conn.atomic_blocks.clear()
    conn.savepoint_ids.clear()
    conn.in_atomic_block = False
    conn.needs_rollback = False
    conn.close()


def _discard_all() -> None:
    """In the async executors' ORM thread: forget what the test may have left open there."""
    for conn in connections.all(initialized_only=True):
        if conn.in_atomic_block or (conn.connection is not None and not conn.autocommit):
            _discard(conn)


def _write_side(ctx) -> None:
    with connection.cursor() as cur:
        cur.execute("insert into rvexec_side values (%s)", [str(ctx.work_id)])


def _leave_autocommit_off(ctx, payload):
    transaction.set_autocommit(False)
    _write_side(ctx)
    return {"ok": 1}


def _leave_atomic_open(ctx, payload):
    transaction.atomic().__enter__()
    _write_side(ctx)
    return {"ok": 1}


def _accept(d, key: str):
    return d.enqueue(scope="tenant-a", command="c", idempotency_key=key, payload={}).work_id


@pytest.mark.parametrize("executor", [_leave_autocommit_off, _leave_atomic_open])
@pytest.mark.parametrize("concurrency", [1, 2])
def test_left_open_transaction__rolled_back_and_the_attempt_fails_ds285(
        committed_clock, define, side_table, executor, concurrency):
    d = define(f"test.left_open_{executor.__name__}_{concurrency}")
    d.executor(executor)
    ids = [_accept(d, "a"), _accept(d, "b")]
    try:
        counts = run_pass(concurrency=concurrency)
    finally:
        left_open = (not connection.get_autocommit(), connection.in_atomic_block)
        if any(left_open):  # do not leak the failure into the next test
            _discard(connection)
    assert left_open == (False, False)
    assert (counts.succeeded, counts.retried) == (0, 2)
    for work_id in ids:
        # What the pass reported is what committed.
        assert work_row(work_id, "state", "last_error->>'code'") == ("pending", "DS285")
        assert permits(work_id) == [(1, 1, "failed", "executor")]
    # What the executor wrote in the transaction it never committed was rolled back.
    assert rows("select work_id from rvexec_side") == []


def test_left_open_transaction__a_reconcilers_answer_is_unknown(committed_clock, define,
                                                                side_table):
    """A reconciler that leaves a transaction open cannot vouch for anything: Unknown, the
    Work suspended for an operator -- committed, not lost in its transaction."""
    d = define("test.left_open_reconciler", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
               policy=work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN))
    crash = [True]

    @d.executor
    def execute(ctx, payload):
        if crash.pop():
            raise Crash
        return {"ran": ctx.attempt}

    @d.reconciler
    def reconcile(ctx, payload):
        transaction.set_autocommit(False)
        _write_side(ctx)
        return work.NotApplied()

    work_id = _accept(d, "a")
    with pytest.raises(Crash):
        run_pass()
    committed_clock.advance(5 * MIN)
    try:
        counts = run_pass()
    finally:
        left_open = not connection.get_autocommit()
        if left_open:
            _discard(connection)
    assert not left_open
    assert (counts.reconciled, counts.suspended, counts.admitted) == (1, 1, 0)
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
    assert permits(work_id) == [(1, 1, None, None)]
    assert rows("select work_id from rvexec_side") == []


def test_left_open_transaction__by_an_async_executor_does_not_swallow_the_next_ones_writes(
        committed_clock, define, side_table):
    """The ORM calls of ``async def`` executors run on one shared thread (``sync_to_async``):
    a transaction one of them leaves open there would hold every later one's writes, never
    committed. It is rolled back when that executor returns, which fails with DS285."""
    from asgiref.sync import SyncToAsync, sync_to_async

    d = define("test.left_open_async")
    calls = []

    def leave_open(ctx) -> None:
        transaction.set_autocommit(False)
        _write_side(ctx)

    @d.executor
    async def run(ctx, payload):
        calls.append(ctx.work_id)
        await sync_to_async(leave_open if len(calls) == 1 else _write_side)(ctx)
        return {"ok": 1}

    ids = [_accept(d, "a"), _accept(d, "b")]
    try:
        counts = run_pass()
    finally:
        SyncToAsync.single_thread_executor.submit(
            lambda: _discard_all() or connections.close_all()).result(timeout=30)
    assert (counts.succeeded, counts.retried) == (1, 1)
    first, second = calls
    assert work_row(first, "state", "last_error->>'code'") == ("pending", "DS285")
    assert work_row(second, "state") == ("succeeded",)
    assert sorted(calls) == sorted(ids)
    # The second executor's own write committed; the first one's was rolled back.
    assert rows("select work_id from rvexec_side") == [(str(second),)]
