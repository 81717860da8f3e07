"""SIGTERM to a real ``process_work --loop --concurrency 2`` worker holding six admitted attempts
(docs/work.md "Concurrency"), ``async def`` executors and synchronous ones: exactly the two
running attempts finish and are committed; the four admitted ones still waiting for a free slot
are handed back -- history ``not_invoked`` (cause ``worker_stopping``), permit
``proven_no_effect``, due again at once, no lease left -- and never started; the process exits
0. A second real worker then runs each handed-back attempt exactly once. Every call is a row of
``demo_effect``, so "exactly once" is counted, not assumed.

The executors wait for a release row the test inserts (no sleep times anything): the test lets
them finish only once a running executor has reported that its worker handled the SIGTERM, so
the slots that free are those of a stopping worker. Before the async drain fix, the stopping
worker started every waiting ``async def`` attempt as slots freed (six started, not two)."""

from __future__ import annotations

import pytest
from demo import runner_targets

from tests.runner.loophelpers import (
    effect_calls,
    effect_count,
    sql,
    start_loop,
    stop,
    wait_until,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

ITEMS = 6
SLOTS = 2
BOUND_SECONDS = 60
ARGS = ("--concurrency", str(SLOTS), "--batch", "10")


@pytest.mark.parametrize("definition", ["gated_async", "gated_sync"])
def test_real_worker__sigterm_hands_back_the_waiting_attempts_and_a_second_worker_runs_them(
    definition,
):
    target = getattr(runner_targets, definition)
    ids = [
        target.enqueue(
            scope="tenant-a", command=f"c-{n}", idempotency_key=f"k-{n}", payload={}
        ).work_id
        for n in range(ITEMS)
    ]
    first = start_loop("process_work", *ARGS)
    try:
        wait_until(
            lambda: effect_count("started") == SLOTS,
            timeout=BOUND_SECONDS,
            what="both slots to start an attempt",
        )
        # One claim admitted all six: two run, four wait for a slot.
        assert sql("select count(*) from durable_work_permit where outcome is null") == [(ITEMS,)]
        first.terminate()
        wait_until(
            lambda: effect_count(runner_targets.STOP_SEEN_KEY) >= 1,
            timeout=BOUND_SECONDS,
            what="a running executor to see its worker told to stop",
        )
        sql(
            "insert into demo_effect (work_id, attempt, key) values (%s, 0, %s)",
            (ids[0], runner_targets.RELEASE_KEY),
        )
    finally:
        code, out = stop(first, timeout=BOUND_SECONDS)
    assert code == 0, out
    calls = effect_calls()
    ran = sorted(calls)
    assert len(ran) == SLOTS, calls  # nothing else started
    assert all(calls[w] == {"started": [1], "effect": [1]} for w in ran), calls
    states = dict(sql("select work_id, state from durable_work"))
    assert sorted(w for w, s in states.items() if s == "succeeded") == ran, states
    waiting = sorted(w for w in ids if w not in ran)
    assert sorted(w for w, s in states.items() if s == "pending") == waiting, states
    assert sql(
        "select work_id, permit_no, outcome, resolution_source from durable_work_permit"
        " where work_id <> all(%s) order by work_id",
        (ran,),
    ) == [(w, 1, "proven_no_effect", "runtime") for w in waiting]
    assert sql(
        "select work_id, detail->>'cause' from durable_work_history"
        " where event = 'not_invoked' order by work_id"
    ) == [(w, "worker_stopping") for w in waiting]
    # Due again at once, and no lease of the stopped worker left on them.
    assert sql(
        "select w.work_id, d.lease_owner, d.due_at <= now() from durable_work_dispatch d"
        " join durable_work w on w.id = d.work_ref order by w.work_id"
    ) == [(w, None, True) for w in waiting]
    assert sql(
        "select work_id, attempt from durable_work where work_id = any(%s) order by work_id",
        (waiting,),
    ) == [(w, 0) for w in waiting]

    second = start_loop("process_work", *ARGS)
    try:
        wait_until(
            lambda: (
                sql("select count(*) from durable_work where state = 'succeeded'")[0][0] == ITEMS
            ),
            timeout=BOUND_SECONDS,
            what="the second worker to run the handed-back attempts",
        )
    finally:
        code, out = stop(second, timeout=BOUND_SECONDS)
    assert code == 0, out
    calls = effect_calls()
    # Exactly once each: the handed-back attempts ran once, on the second worker, as attempt 1
    # (a hand-back consumes no attempt); the two drained ones did not run again.
    assert sorted(calls) == sorted(ids), calls
    assert all(calls[w] == {"started": [1], "effect": [1]} for w in ids), calls
    assert sql(
        "select work_id, permit_no, outcome from durable_work_permit"
        " where work_id = any(%s) order by work_id, permit_no",
        (waiting,),
    ) == [row for w in waiting for row in ((w, 1, "proven_no_effect"), (w, 2, "succeeded"))]
    assert sql("select count(*) from durable_work_dispatch") == [(0,)]
