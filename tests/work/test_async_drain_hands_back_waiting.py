"""A stopping pass (SIGTERM under ``--loop``) starts no new attempt, ``async def`` ones included:
the admitted async attempts still waiting for a free slot of the ``--concurrency`` gate when the
stop arrives are handed back (permit ``proven_no_effect``, due again at once), as synchronous
ones waiting for a pool thread are. Before: every admitted async attempt was started as slots
freed, so the drain ran the whole claim (up to ``--batch`` more attempts) instead of only the
running ones."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.work.conftest import dispatch, permits, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


def test_drain__async_attempts_waiting_for_a_slot_are_handed_back(clock, define):
    d = define("t.async_drain")
    started: list[str] = []
    stop = threading.Event()

    @d.executor
    async def run(ctx, payload):
        started.append(payload["k"])
        if len(started) == 2:  # both slots busy: the worker is told to stop now
            stop.set()
        while not stop.is_set():  # the first waits for the second to start
            await asyncio.sleep(0.01)
        return {"k": payload["k"]}

    keys = ("a", "b", "c", "d", "e", "f")
    ids = {
        k: d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={"k": k}).work_id
        for k in keys
    }
    counts = run_pass(batch=6, concurrency=2, stop=stop.is_set)
    assert counts.admitted == 6
    assert len(started) == 2, started
    assert counts.succeeded == 2
    for k in keys:
        if k in started:
            assert work_row(ids[k], "state") == ("succeeded",), k
        else:
            assert work_row(ids[k], "state") == ("pending",), k
            assert [p[2] for p in permits(ids[k])] == ["proven_no_effect"], k
            assert dispatch(ids[k])[1] is None, k
