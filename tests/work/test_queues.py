"""Queues and priorities for all Work (issue 15 item 4; docs/work.md "Queues and priorities"):
the claim takes the highest priority first, then the oldest due, per queue; a worker serves
every queue or the ones it names; the claim stays an index scan whatever waits in the future;
the wake-up names the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection

from durable_schedule.errors import InvalidArgument, InvalidIdentifier, InvalidQueue
from tests.conftest import T0
from tests.work.conftest import run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)
SCOPE = "tenant-q"


@pytest.fixture
def job(define):
    return define("queues.job")


def accept(job, key, *, priority=0, queue="default", due_at=None):
    return job.enqueue(scope=SCOPE, command="c", idempotency_key=key, payload={"k": key},
                       priority=priority, queue=queue, due_at=due_at).work_id


def run_order(job, max_items, **kwargs) -> list[str]:
    order: list[str] = []
    job.executor_fn = None
    job.executor(lambda ctx, payload: order.append(payload["k"]))
    run_pass(max_items=max_items, batch=1, **kwargs)
    return order


def test_claim__highest_priority_first_then_oldest_due(committed_clock, job):
    accept(job, "low-old", priority=-5, due_at=T0 - timedelta(hours=3))
    accept(job, "zero-old", priority=0, due_at=T0 - timedelta(hours=2))
    accept(job, "high-new", priority=10, due_at=T0 - timedelta(minutes=1))
    accept(job, "high-old", priority=10, due_at=T0 - timedelta(hours=1))
    accept(job, "zero-new", priority=0)
    assert run_order(job, 5) == ["high-old", "high-new", "zero-old", "zero-new", "low-old"]


def test_claim__a_future_high_priority_backlog_does_not_hide_due_lower_priority_work(
        committed_clock, job):
    for i in range(50):
        accept(job, f"later-{i}", priority=100, due_at=T0 + timedelta(days=1))
    accept(job, "now", priority=-100)
    assert run_order(job, 10) == ["now"]


def test_queue__a_worker_serves_only_the_queues_it_names(committed_clock, job):
    accept(job, "email-1", queue="emails")
    accept(job, "report-1", queue="reports", priority=50)
    accept(job, "default-1")
    assert run_order(job, 10, queues=["emails"]) == ["email-1"]
    assert run_order(job, 10, queues=["reports", "default"]) == ["report-1", "default-1"]


def test_queue__within_one_priority_queues_are_served_in_the_order_given(committed_clock, job):
    accept(job, "a", queue="alpha", due_at=T0 - timedelta(hours=1))
    accept(job, "b", queue="beta", due_at=T0 - timedelta(hours=2))
    assert run_order(job, 2, queues=["alpha", "beta"]) == ["a", "b"]
    accept(job, "a2", queue="alpha", priority=1)
    accept(job, "b2", queue="beta", priority=2)
    assert run_order(job, 2, queues=["alpha", "beta"]) == ["b2", "a2"]  # priority first


def test_queue_and_priority__are_stored_and_copied_to_the_dispatch_row(committed_clock, job):
    work_id = accept(job, "x", queue="emails", priority=-7)
    assert work_row(work_id, "queue_name", "priority") == ("emails", -7)
    with connection.cursor() as cur:
        cur.execute("select d.queue_name, d.priority from durable_work_dispatch d"
                    " join durable_work w on w.id = d.work_ref where w.work_id = %s",
                    [work_id])
        assert cur.fetchone() == ("emails", -7)


def test_queue_and_priority__a_retry_keeps_them(committed_clock, job):
    work_id = accept(job, "flaky", queue="emails", priority=3)
    job.executor_fn = None

    @job.executor
    def fail(ctx, payload):
        raise RuntimeError("once")

    run_pass(max_items=1, queues=["emails"])
    assert work_row(work_id, "state") == ("pending",)
    with connection.cursor() as cur:
        cur.execute("select d.queue_name, d.priority from durable_work_dispatch d"
                    " join durable_work w on w.id = d.work_ref where w.work_id = %s",
                    [work_id])
        assert cur.fetchone() == ("emails", 3)


@pytest.mark.parametrize("bad, error", [
    ({"priority": 101}, InvalidArgument), ({"priority": -101}, InvalidArgument),
    ({"priority": True}, InvalidArgument), ({"priority": 1.5}, InvalidArgument),
    ({"queue": ""}, InvalidIdentifier), ({"queue": " padded "}, InvalidIdentifier),
    ({"queue": "tab\tqueue"}, InvalidIdentifier),
])
def test_enqueue__refuses_a_bad_queue_or_priority_and_writes_nothing(committed_clock, job, bad,
                                                                    error):
    with pytest.raises(error):
        job.enqueue(scope=SCOPE, command="c", idempotency_key="k", payload={}, **bad)
    with connection.cursor() as cur:
        cur.execute("select count(*) from durable_work")
        assert cur.fetchone() == (0,)


def test_queues_setting__refuses_an_unlisted_queue(committed_clock, job, settings):
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["emails"]}
    with pytest.raises(InvalidQueue, match="DS244"):
        accept(job, "x", queue="reports")
    accept(job, "y", queue="emails")
    accept(job, "z")  # the default queue is always allowed: schedules make Work there


def test_notify__the_wake_up_names_the_queue(committed_clock, job, pg_factory):
    listener = pg_factory(autocommit=True)
    listener.execute("LISTEN durable_work_due")
    accept(job, "n", queue="emails")
    payloads = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    assert payloads == ["emails"]


def test_command__process_work_queue_is_repeatable(committed_clock, job):
    accept(job, "e", queue="emails")
    accept(job, "r", queue="reports")
    accept(job, "d")
    job.executor_fn = None
    job.executor(lambda ctx, payload: None)
    from io import StringIO

    out = StringIO()
    call_command("process_work", "--queue", "emails", "--queue", "reports", "--no-heartbeat",
                 "--lease-owner", "q", stdout=out)
    assert out.getvalue().startswith("claimed=2 ")
    assert [s for (s,) in _states()] == ["pending", "succeeded", "succeeded"]


def _states():
    with connection.cursor() as cur:
        cur.execute("select state from durable_work order by idempotency_key")
        return cur.fetchall()


EXPLAIN_ROWS = 20_000


def test_explain__every_claim_probe_reads_the_queue_priority_due_index(pg):
    # The claim function walks priorities with index probes and takes due rows through the
    # (queue, priority, due) index; each probe's plan is read here with the same statement
    # shape, on a table large enough that a sequential scan would be chosen if it were cheaper.
    # Synthetic dispatch rows, inside a transaction that is rolled back: replica mode skips the
    # foreign keys and triggers (no Work behind them; the plan is what is tested).
    with pg.cursor() as cur:
        cur.execute("set local session_replication_role = replica")
        cur.execute(
            "insert into durable_work_dispatch (scope_routing_id, work_ref, due_at, queue_name,"
            " priority) select 1, g, %s::timestamptz + (g || ' seconds')::interval,"
            " 'q' || (g %% 5), (g %% 7) - 3 from generate_series(1, %s) g",
            [T0, EXPLAIN_ROWS])
        cur.execute("analyze durable_work_dispatch")
        probes = [
            "select max(d.priority) from durable_work_dispatch d"
            " where d.queue_name = 'q1' and d.due_at is not null and d.priority < 2",
            "select min(d.queue_name) from durable_work_dispatch d"
            " where d.due_at is not null and d.queue_name > 'q1'",
            "select x.dispatch_id from durable_work_dispatch x where x.queue_name = 'q1'"
            " and x.priority = 0 and x.due_at is not null and x.due_at <= now()"
            " order by x.due_at limit 10 for update skip locked",
        ]
        for probe in probes:
            cur.execute("explain " + probe)
            plan = "\n".join(row[0] for row in cur.fetchall())
            assert "durable_work_dispatch_queue" in plan and "Seq Scan" not in plan, plan


def test_wake_up__a_runner_serving_some_queues_ignores_the_others():
    from durable_schedule.runner.service import _serves

    wakes = _serves(("emails", "reports"))
    assert wakes("emails") and wakes("reports")
    assert not wakes("default") and not wakes("bulk")
    assert wakes("")  # a wake-up that names no queue (older triggers) still wakes it
