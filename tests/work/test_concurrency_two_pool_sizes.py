"""Two passes of one process with different ``concurrency`` (an in-process caller beside the
runner, docs/work.md "Concurrency"): the second one replaced the shared pool by shutting the
first one's threads down under it, so the first pass's next jobs went to a queue no thread
served and that pass waited for ever. Each pass keeps the pool it started with; a pool of
another size is retired once no pass uses it."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from durable_schedule.work.concurrency import shutdown_pool
from tests.work.conftest import HANG_BOUND_SECONDS, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_pool():
    yield
    shutdown_pool()


def test_a_pass_of_another_size_does_not_take_the_pool_from_a_running_pass(
        committed_clock, define):
    first = define("test.pool_first")
    second = define("test.pool_second")
    started, release = threading.Event(), threading.Event()

    @first.executor
    def slow(ctx, payload):
        started.set()
        if not release.wait(HANG_BOUND_SECONDS):
            raise AssertionError("never released")
        return {"n": payload["n"]}

    second.executor(lambda ctx, payload: {"n": payload["n"]})
    # More items than the first pass's slots and queue: it must submit again later.
    ids = [first.enqueue(scope="tenant-a", command="c", idempotency_key=f"f{n}",
                         payload={"n": n}).work_id for n in range(8)]
    box: list = []

    def first_pass() -> None:
        try:
            box.append(run_pass(concurrency=2, batch=1))
        except BaseException as exc:  # noqa: BLE001 -- the test inspects it
            box.append(exc)
        finally:
            connections.close_all()

    def second_pass() -> None:
        try:
            box.append(run_pass(concurrency=3, max_items=1))
        finally:
            connections.close_all()

    runner = threading.Thread(target=first_pass, daemon=True)
    runner.start()
    assert started.wait(HANG_BOUND_SECONDS)
    other = second.enqueue(scope="tenant-a", command="c", idempotency_key="s",
                           payload={"n": 99}).work_id
    replaced = threading.Thread(target=second_pass, daemon=True)
    replaced.start()
    release.set()
    replaced.join(HANG_BOUND_SECONDS)
    runner.join(HANG_BOUND_SECONDS)
    assert not runner.is_alive(), "the first pass waited for ever"
    assert not replaced.is_alive()
    # Either pass may have run the second definition's item: every item ran once.
    assert len(box) == 2 and sum(c.succeeded for c in box) == 9, box
    assert all(work_row(i, "state") == ("succeeded",) for i in ids)
    assert work_row(other, "state") == ("succeeded",)
