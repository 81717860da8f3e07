"""An ``async def`` executor that raises ``KeyboardInterrupt`` or ``SystemExit`` stops the worker,
and no async attempt still waiting for a slot of the ``--concurrency`` gate starts after it: the
waiting ones are handed back (permit ``proven_no_effect``, due again at once) and the next pass
runs each exactly once (docs/work.md "Concurrency"). Before: the interrupted attempt's slot was
freed on the event loop before the pass learnt of the interrupt, so one waiting attempt took the
slot and its executor ran although the worker was stopping."""

from __future__ import annotations

import asyncio

import pytest

from durable_schedule.work import concurrency as concurrency_module
from tests.work.conftest import dispatch, pass_in_thread, permits, work_row

pytestmark = pytest.mark.django_db(transaction=True)

#: Bounded polls (0.01s each) against a hang, not timings.
BOUND = 3000


@pytest.mark.parametrize("concurrency", [2, 3])  # 1: the sequential pass, no gate
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_async_interrupt__no_waiting_attempt_starts_after_it(
    clock, define, interrupt, concurrency, monkeypatch
):
    d = define("t.async_interrupt_waiting")
    started: list[str] = []
    first_pass = [True]
    handed_back: list = []
    commit = concurrency_module.commit_outcomes

    def spy(results, opts, tally):  # what the pipeline commits (on its own connection)
        handed_back.extend(a for a, o in results if o.kind == "handed_back")
        return commit(results, opts, tally)

    monkeypatch.setattr(concurrency_module, "commit_outcomes", spy)

    @d.executor
    async def run(ctx, payload):
        started.append(payload["k"])  # on the loop's one thread
        nth = len(started)
        if not first_pass or nth > concurrency:  # a waiting attempt that started
            return {"k": payload["k"]}
        # Every slot holds a started attempt and the others wait on the gate.
        for _ in range(BOUND):
            if len(started) >= concurrency:
                break
            await asyncio.sleep(0.01)
        if nth == 1:
            raise interrupt
        # Another slot: hold it until the pipeline has committed the waiting attempts as
        # handed back -- or, as before, until a waiting one started in the freed slot.
        for _ in range(BOUND):
            if len(handed_back) == 6 - concurrency or len(started) > concurrency:
                break
            await asyncio.sleep(0.01)
        return {"k": payload["k"]}

    keys = ("a", "b", "c", "d", "e", "f")
    ids = {
        k: d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={"k": k}).work_id
        for k in keys
    }
    finished, got = pass_in_thread(batch=6, concurrency=concurrency)
    assert finished, "the pass hung after the async executor's interrupt"
    assert isinstance(got, interrupt), got
    # Only the attempts that held a slot when the interrupt escaped ran; none started after it.
    assert len(started) == concurrency, started
    interrupted, others = started[0], started[1:]
    assert work_row(ids[interrupted], "state") == ("running",)  # recovered after its lease
    assert [p[2] for p in permits(ids[interrupted])] == [None]
    for k in others:  # started before the interrupt by another slot: its outcome is kept
        assert work_row(ids[k], "state") == ("succeeded",), k
    waiting = [k for k in keys if k not in started]
    assert len(waiting) == 6 - concurrency
    for k in waiting:  # handed back, not started: no effect, due again at once
        assert work_row(ids[k], "state") == ("pending",), k
        assert [p[2] for p in permits(ids[k])] == ["proven_no_effect"], k
        assert dispatch(ids[k])[1] is None, k

    # The next pass (another worker) runs each handed-back attempt exactly once.
    first_pass.clear()
    started.clear()
    finished, got = pass_in_thread(batch=6, concurrency=concurrency, lease_owner="worker-2")
    assert finished and not isinstance(got, BaseException), got
    assert sorted(started) == sorted(waiting), started
    assert got.succeeded == len(waiting)
    for k in waiting:
        assert work_row(ids[k], "state") == ("succeeded",), k
        assert [p[2] for p in permits(ids[k])] == ["proven_no_effect", "succeeded"], k
