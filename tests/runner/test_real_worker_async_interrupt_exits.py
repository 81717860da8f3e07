"""``process_work --loop`` as a real process, an ``async def`` executor raising ``SystemExit``
(docs/work.md "Execution"): the worker process exits -- with the executor's exit code, as for a
synchronous executor -- instead of hanging on a dead event-loop thread, and the interrupted
attempt records nothing. Once its lease has expired (by the clock seam), a second real worker
recovers it and the Work succeeds exactly once: every call is a row of ``demo_effect``.

Before the interrupt was carried out of the event loop, asyncio re-raised it out of
``run_forever``: the loop thread died, the attempt's future never settled and the worker waited
for it for ever (the hang guard below fails the test instead)."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from demo import runner_targets

from tests.runner.loophelpers import sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

#: A bound against the hang this file pins: the worker exits within a second or two.
HANG_BOUND_SECONDS = 60
EXIT_CODE = 3


def _exit_of(proc: subprocess.Popen) -> tuple[int, str]:
    """Wait, without signalling it, for the worker to exit on its own (bounded)."""
    try:
        out, _ = proc.communicate(timeout=HANG_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(
            "the worker hung after its async executor raised SystemExit:\n" + out
        ) from None
    return proc.returncode, out


def _effects(work_id) -> list[tuple[str, int]]:
    return sql("select key, attempt from demo_effect where work_id = %s order by id", (work_id,))


@pytest.mark.parametrize("concurrency", [1, 2])
def test_real_worker__async_system_exit_exits_and_the_work_succeeds_once_after_its_lease(
    committed_clock, concurrency
):
    work_id = runner_targets.interrupting_async.enqueue(
        scope="tenant-a", command="c", idempotency_key="k", payload={"code": EXIT_CODE}
    ).work_id
    args = ("--concurrency", str(concurrency), "--batch", "10")
    first = start_loop("process_work", *args)
    code, out = _exit_of(first)
    assert code == EXIT_CODE, out
    # Left as a crashed worker leaves it: admitted, its permit unresolved, its lease held.
    assert sql("select state, attempt from durable_work") == [("running", 1)], out
    assert sql("select permit_no, outcome from durable_work_permit") == [(1, None)]
    assert _effects(work_id) == [("started", 1)]

    committed_clock.advance(timedelta(minutes=10))  # past the interrupted attempt's lease
    second = start_loop("process_work", *args, env={"DURABLE_MAX_IDLE_SECONDS": "1"})
    try:
        # The recovery: the lost attempt counts as failed, its retry waits for its backoff.
        wait_until(
            lambda: sql("select 1 from durable_work_history where event = 'retry_scheduled'"),
            timeout=HANG_BOUND_SECONDS,
            what="the lost attempt to be recovered",
        )
        [(due,)] = sql("select due_at from durable_work_dispatch")
        committed_clock.set(max(due, committed_clock.now))  # the retry is due
        wait_until(
            lambda: sql("select 1 from durable_work where state = 'succeeded'"),
            timeout=HANG_BOUND_SECONDS,
            what="the retry to succeed",
        )
    finally:
        code, out = stop(second)
    assert code == 0, out
    assert sql("select state, attempt from durable_work") == [("succeeded", 2)]
    # Exactly once: the interrupted attempt did no work, the retry did it once.
    assert _effects(work_id) == [("started", 1), ("started", 2), ("effect", 2)]
    assert sql("select count(*) from durable_work_dispatch") == [(0,)]
    assert sql("select event, detail->>'cause' from durable_work_history order by id") == [
        ("accepted", None),
        ("admitted", None),
        ("retry_scheduled", "lease_expired"),
        ("admitted", None),
        ("succeeded", None),
    ]
