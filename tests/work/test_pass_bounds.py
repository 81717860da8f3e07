"""Bounds and arguments of a Work pass (docs/work.md "Running Work"): ``process_work
--max-items N`` claims at most N rows over the whole run, its transient retries included;
``heartbeat`` is a bool; a worker names only queues enqueue accepts."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError

from durable_schedule import work
from durable_schedule.errors import InvalidArgument, InvalidQueue
from durable_schedule.work import concurrency as concurrent
from durable_schedule.work import passes
from tests.work.conftest import count, dispatch, history, work_row

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def job(define):
    d = define("test.bounds")
    d.executor(lambda ctx, payload: {"ran": payload["k"]})
    return d


def accept(job, n: int, queue: str = "default") -> list:
    return [job.enqueue(scope="tenant-a", command="c", idempotency_key=f"{queue}-{i}",
                        payload={"k": i}, queue=queue).work_id for i in range(n)]


def transient_once_at_call(monkeypatch, module, name: str, at: int) -> list:
    """``module.name`` raises a transient connection error at its ``at``-th call (before it
    runs: nothing of that call is claimed), and otherwise runs the real function."""
    real = getattr(module, name)
    calls: list[int] = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            raise OperationalError("server closed the connection unexpectedly")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, flaky)
    return calls


def succeeded() -> int:
    return count("durable_work where state = 'succeeded'")


# ------------------------------------------------------------------ B1: --max-items is a total
def test_command__max_items_bounds_the_whole_run_across_a_transient_retry(
        committed_clock, job, monkeypatch):
    accept(job, 6)
    # --batch 1: one claim per row; the second claim of the first attempt fails transiently,
    # after one row was claimed and run. The retried pass may claim only the 2 left of 3.
    calls = transient_once_at_call(monkeypatch, passes, "admit_batch", at=2)
    out = StringIO()
    call_command("process_work", "--max-items", "3", "--batch", "1", "--no-heartbeat",
                 "--lease-owner", "bounds", stdout=out)
    assert len(calls) >= 3  # the failing call happened, and the retry claimed again
    assert succeeded() == 3
    assert out.getvalue().startswith("claimed=3 "), out.getvalue()
    assert count("durable_work where state = 'pending'") == 3


@pytest.mark.parametrize("concurrency", [1, 2])
def test_process_work_once__counts_every_attempt_and_stops_at_the_bound(
        committed_clock, job, monkeypatch, concurrency):
    accept(job, 5)
    claiming = passes if concurrency == 1 else concurrent  # where each runs its claims
    transient_once_at_call(monkeypatch, claiming, "admit_batch", at=3)
    counts = passes.process_work_once(max_items=4, batch=1, heartbeat=False,
                                      lease_owner="bounds", concurrency=concurrency)
    assert (counts.claimed, counts.succeeded) == (4, 4)
    assert succeeded() == 4


def test_process_work_once__checks_its_bound_before_anything_runs(committed_clock, job):
    accept(job, 1)
    with pytest.raises(InvalidArgument):
        passes.process_work_once(max_items=0, heartbeat=False)
    assert succeeded() == 0


# ------------------------------------------------------------------ B2: heartbeat is a bool
@pytest.mark.parametrize("bad", ["no", "false", 0, 1, None, "True"])
def test_process_work_pass__a_heartbeat_that_is_not_a_bool_is_refused(committed_clock, job, bad):
    [work_id] = accept(job, 1)
    before = (work_row(work_id, "state", "attempt"), dispatch(work_id), history(work_id))
    with pytest.raises(InvalidArgument) as caught:
        work.process_work_pass(heartbeat=bad, lease_owner="bounds")
    assert caught.value.code == "DS406" and "heartbeat" in caught.value.message
    assert (work_row(work_id, "state", "attempt"), dispatch(work_id), history(work_id)) == before


def test_process_work_pass__heartbeat_false_and_true_run(committed_clock, job):
    accept(job, 2)
    assert work.process_work_pass(heartbeat=False, max_items=1).succeeded == 1
    assert work.process_work_pass(heartbeat=True, max_items=1).succeeded == 1


# ------------------------------------------------------------------ B3: --queue and QUEUES
def test_command__a_queue_outside_durable_queues_is_refused_ds244(committed_clock, job, settings):
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["emails"]}
    [work_id] = accept(job, 1, queue="emails")
    before = (work_row(work_id, "state", "attempt"), dispatch(work_id))
    with pytest.raises(CommandError, match="DS244"):
        call_command("process_work", "--queue", "emails", "--queue", "emial", "--no-heartbeat")
    with pytest.raises(InvalidQueue):
        work.process_work_pass(queues=["emial"], heartbeat=False)
    assert (work_row(work_id, "state", "attempt"), dispatch(work_id)) == before
    # Listed queues and the default queue (always accepted by enqueue) are served.
    out = StringIO()
    call_command("process_work", "--queue", "emails", "--queue", "default", "--no-heartbeat",
                 stdout=out)
    assert out.getvalue().startswith("claimed=1 ")


def test_command__without_durable_queues_any_queue_name_is_served(committed_clock, job):
    accept(job, 1, queue="anything")
    out = StringIO()
    call_command("process_work", "--queue", "anything", "--no-heartbeat", stdout=out)
    assert out.getvalue().startswith("claimed=1 ")
