"""A real ``process_work --loop --concurrency 2`` worker holding six admitted ``async def``
attempts, one of which raises ``KeyboardInterrupt`` while the other slot runs and four wait on the
gate (docs/work.md "Execution", "Concurrency"): the process exits on the interrupt, the attempt
that held the other slot finishes and is committed, the four waiting ones never start -- they are
handed back (history ``not_invoked``, permit ``proven_no_effect``, due again at once, no lease
left) -- and the interrupted attempt records nothing. A second real worker then runs each
handed-back attempt exactly once and, once its lease has expired (by the clock seam), recovers
the interrupted one, whose retry does the work once. Every call is a row of ``demo_effect``, so
"exactly once" is counted, not assumed.

Nothing sleeps to time anything: the executors wait on rows (the interrupting one for both slots
to have started, the other for a release row the test inserts only once the stopping worker has
decided about the waiting attempts). Before the interrupt closed the gate, the interrupted
attempt's slot was freed on the event loop before the pass learnt of the interrupt, and a
waiting attempt started in it although the worker was stopping."""

from __future__ import annotations

import signal
import subprocess
from datetime import timedelta

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

ITEMS = 6  # one interrupting attempt, five that wait for the release row
SLOTS = 2
BOUND_SECONDS = 60
ARGS = ("--concurrency", str(SLOTS), "--batch", "10")


def _exit_of(proc: subprocess.Popen) -> tuple[int, str]:
    """Wait, without signalling it, for the worker to exit on its own (bounded)."""
    try:
        out, _ = proc.communicate(timeout=BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError("the worker did not exit after the interrupt:\n" + out) from None
    return proc.returncode, out


def test_real_worker__async_interrupt_hands_back_the_waiting_attempts_and_a_second_worker_runs_them(
    committed_clock,
):
    # The interrupting Work is claimed first (higher priority), so it takes a slot at once.
    interrupted = runner_targets.interrupting_gated_async.enqueue(
        scope="tenant-a", command="i", idempotency_key="i", payload={"slots": SLOTS},
        priority=10,
    ).work_id
    others = [
        runner_targets.gated_async.enqueue(
            scope="tenant-a", command=f"c-{n}", idempotency_key=f"k-{n}", payload={}
        ).work_id
        for n in range(ITEMS - 1)
    ]
    first = start_loop("process_work", *ARGS)
    try:
        wait_until(
            lambda: effect_count(runner_targets.INTERRUPTING_KEY) == 1,
            timeout=BOUND_SECONDS,
            what="the attempt to raise KeyboardInterrupt with both slots taken",
        )
        # The stopping worker decides about the four waiting attempts while the other slot is
        # still held: handed back -- or, as before, one started in the freed slot.
        wait_until(
            lambda: (
                sql("select count(*) from durable_work_history where event = 'not_invoked'")
                == [(ITEMS - SLOTS,)]
                or effect_count("started") > SLOTS
            ),
            timeout=BOUND_SECONDS,
            what="the waiting attempts to be handed back",
        )
        sql(
            "insert into demo_effect (work_id, attempt, key) values (%s, 0, %s)",
            (others[0], runner_targets.RELEASE_KEY),
        )
        code, out = _exit_of(first)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert code == -signal.SIGINT, out  # the uncaught interrupt ends the process
    calls = effect_calls()
    assert calls[interrupted] == {"started": [1], "effect": []}, calls
    ran = sorted(w for w in calls if w != interrupted)
    assert len(ran) == SLOTS - 1, calls  # nothing started after the interrupt
    assert all(calls[w] == {"started": [1], "effect": [1]} for w in ran), calls
    # The interrupted attempt: left as a crashed worker leaves it, recovered after its lease.
    assert sql("select state, attempt from durable_work where work_id = %s", (interrupted,)) == [
        ("running", 1)
    ]
    states = dict(sql("select work_id, state from durable_work"))
    assert sorted(w for w, s in states.items() if s == "succeeded") == ran, states
    waiting = sorted(w for w in others if w not in ran)
    assert sorted(w for w, s in states.items() if s == "pending") == waiting, states
    assert sql(
        "select work_id, permit_no, outcome, resolution_source from durable_work_permit"
        " where work_id = any(%s) order by work_id",
        (waiting,),
    ) == [(w, 1, "proven_no_effect", "runtime") for w in waiting]
    assert sql(
        "select work_id, detail->>'cause' from durable_work_history"
        " where event = 'not_invoked' order by work_id"
    ) == [(w, "worker_stopping") for w in waiting]
    # Due again at once, and no lease of the stopped worker left on them.
    assert sql(
        "select w.work_id, d.lease_owner, d.due_at <= %s from durable_work_dispatch d"
        " join durable_work w on w.id = d.work_ref where w.work_id = any(%s) order by w.work_id",
        (committed_clock.now, waiting),
    ) == [(w, None, True) for w in waiting]
    assert sql(
        "select work_id, attempt from durable_work where work_id = any(%s) order by work_id",
        (waiting,),
    ) == [(w, 0) for w in waiting]

    second = start_loop("process_work", *ARGS, env={"DURABLE_MAX_IDLE_SECONDS": "1"})
    try:
        wait_until(
            lambda: sql(
                "select count(*) from durable_work where state = 'succeeded' and work_id = any(%s)",
                (others,),
            ) == [(ITEMS - 1,)],
            timeout=BOUND_SECONDS,
            what="the second worker to run the handed-back attempts",
        )
        committed_clock.advance(timedelta(minutes=10))  # past the interrupted attempt's lease
        wait_until(
            lambda: sql("select 1 from durable_work_history where event = 'retry_scheduled'"),
            timeout=BOUND_SECONDS,
            what="the interrupted attempt to be recovered",
        )
        [(due,)] = sql("select due_at from durable_work_dispatch")
        committed_clock.set(max(due, committed_clock.now))  # its retry is due
        wait_until(
            lambda: sql(
                "select 1 from durable_work where state = 'succeeded' and work_id = %s",
                (interrupted,),
            ),
            timeout=BOUND_SECONDS,
            what="the retry of the interrupted attempt to succeed",
        )
    finally:
        code, out = stop(second, timeout=BOUND_SECONDS)
    assert code == 0, out
    calls = effect_calls()
    # Exactly once each: the handed-back attempts ran once, on the second worker, as attempt 1
    # (a hand-back consumes no attempt); the interrupted Work did its work once, on its retry.
    assert sorted(calls) == sorted([interrupted, *others]), calls
    assert all(calls[w] == {"started": [1], "effect": [1]} for w in others), calls
    assert calls[interrupted] == {"started": [1, 2], "effect": [2]}, calls
    assert sql(
        "select work_id, permit_no, outcome from durable_work_permit"
        " where work_id = any(%s) order by work_id, permit_no",
        (waiting,),
    ) == [row for w in waiting for row in ((w, 1, "proven_no_effect"), (w, 2, "succeeded"))]
    assert sql("select count(*) from durable_work_dispatch") == [(0,)]
