"""Adversarial review, round 6: a ``process_work --loop --queue A`` runner sizes its idle sleep
from the queues it serves. Due Work of a queue it does not serve (no worker for it, or its
worker down) must not make it run empty passes back to back: the next due time it sleeps
towards was read over every queue, so an overdue row elsewhere meant "due now", forever."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule.runner import loop, service
from durable_schedule.runner.loop import StopFlag
from tests.conftest import T0

pytestmark = pytest.mark.django_db

SCOPE = "tenant-a"


@pytest.fixture
def job(define):
    d = define("loopq.job")
    d.executor(lambda ctx, payload: None)
    return d


def accept(job, key, *, queue, due_at):
    return job.enqueue(scope=SCOPE, command="c", idempotency_key=key, payload={},
                       queue=queue, due_at=due_at).work_id


def _idle_sleeps(monkeypatch, queues) -> list[float | None]:
    """Run two empty passes of the Work loop serving ``queues``; the next-due value each idle
    wait would sleep towards (the wait itself returns at once: no wall-clock sleep)."""
    seen: list[float | None] = []

    def spy(listener, stop, seconds_until_due, wakes_for=None):
        seen.append(seconds_until_due())
        return True

    monkeypatch.setattr(loop, "_idle_wait", spy)
    service.serve("work", lambda stop: {"claimed": 0}, stop=StopFlag(), max_passes=2,
                  install_signals=False, lease_owner="loopq:1", queues=queues)
    return seen


def test_loop_serving_a_queue__ignores_due_work_of_other_queues(clock, job, monkeypatch):
    accept(job, "overdue-elsewhere", queue="reports", due_at=T0 - timedelta(hours=1))
    assert _idle_sleeps(monkeypatch, ("emails",)) == [None]  # nothing of "emails" is due
    accept(job, "later-here", queue="emails", due_at=T0 + timedelta(minutes=5))
    [until] = _idle_sleeps(monkeypatch, ("emails",))
    assert until == pytest.approx(300.0)


def test_loop_serving_every_queue__still_sees_every_queue(clock, job, monkeypatch):
    accept(job, "overdue", queue="reports", due_at=T0 - timedelta(hours=1))
    [until] = _idle_sleeps(monkeypatch, None)
    assert until == pytest.approx(-3600.0)
