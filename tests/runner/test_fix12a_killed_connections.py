"""A ``process_work --loop --concurrency 4`` worker whose connections are ended one at a time
with ``pg_terminate_backend`` (SQLSTATE 57P01) while items run: the heartbeat's, the
listener's, one slot's and the claim/outcome pipeline's (docs/operations.md "Connections one
``process_work`` process opens"). Each cut is a real server-side termination of that backend
only; the worker must keep running, every item must succeed exactly once by the effects ledger
(one ``started`` effect per item), no dispatch row may be left, and SIGTERM must exit 0."""

from __future__ import annotations

import pytest
from demo import pipeline_targets
from django.db import connection

from tests.runner.loophelpers import sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

ITEMS = 12


def own_pid() -> int:
    with connection.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        return cur.fetchone()[0]


def loop_backends(exclude: int) -> list[tuple[int, str, str]]:
    """(pid, state, last query) of every client backend on the test database but this test's."""
    return sql(
        "select pid, coalesce(state, ''), query from pg_stat_activity"
        " where datname = current_database() and backend_type = 'client backend'"
        " and pid <> pg_backend_pid() and pid <> %s",
        (exclude,),
    )


def idle_roles(exclude: int) -> dict[str, int] | None:
    """While the loop idles it holds exactly three connections: the pipeline's (the main
    thread's, last seen asking for the next due time), the listener's and the heartbeat's."""
    rows = loop_backends(exclude)
    if len(rows) != 3:
        return None
    roles = {}
    for pid, _, query in rows:
        if query == "LISTEN durable_work_due":
            roles["listener"] = pid
        elif "durable_schedule_seconds_until_due" in query:
            roles["pipeline"] = pid
        else:
            roles["heartbeat"] = pid
    return roles if len(roles) == 3 else None


def succeeded() -> int:
    return sql("select count(*) from durable_work where state = 'succeeded'")[0][0]


def enqueue(prefix: str, n: int, seconds: float) -> None:
    for i in range(n):
        pipeline_targets.marked_slow.enqueue(
            scope="tenant-a",
            command=f"{prefix}-{i}",
            idempotency_key=f"{prefix}-{i}",
            payload={"seconds": seconds},
        )


@pytest.mark.parametrize("target", ["heartbeat", "listener", "slot", "pipeline"])
def test_one_connection_killed_while_items_run__nothing_lost_or_duplicated(target):
    mine = own_pid()
    proc = start_loop(
        "process_work",
        "--concurrency",
        "4",
        "--batch",
        "4",
        env={"DURABLE_MAX_IDLE_SECONDS": "1", "DURABLE_HEARTBEAT_SECONDS": "0.2"},
    )
    killed = None
    try:
        roles = wait_until(
            lambda: proc.poll() is None and idle_roles(mine),
            what="the idle loop's three connections",
        )
        enqueue("a", ITEMS, 0.4)

        def target_while_running():
            if proc.poll() is not None:
                return "exited"
            if sql("select count(*) from demo_effect where key = 'started'")[0][0] == 0:
                return None
            if succeeded() >= ITEMS:
                return "too late"
            if target != "slot":
                return roles[target]
            slots = [
                pid
                for pid, _, query in loop_backends(mine)
                if pid not in roles.values() and "demo_effect" in query
            ]
            return slots[0] if slots else None

        found = wait_until(target_while_running, what=f"the {target} connection mid-run")
        assert isinstance(found, int), f"{found}: {loop_backends(mine)}"
        assert sql("select pg_terminate_backend(%s)", (found,)) == [(True,)]
        killed = found
        wait_until(
            lambda: proc.poll() is not None or succeeded() >= ITEMS,
            timeout=60,
            what="the first items to finish (or the loop to exit)",
        )
        assert proc.poll() is None, f"the loop exited after the {target} connection was killed"
        # The loop still serves new work after the cut (the listener is re-opened, or polled).
        enqueue("b", 4, 0)
        wait_until(
            lambda: proc.poll() is not None or succeeded() >= ITEMS + 4,
            timeout=60,
            what="the later items to run (or the loop to exit)",
        )
        assert proc.poll() is None, f"the loop exited after the {target} connection was killed"
    finally:
        code, out = stop(proc)
    assert killed is not None
    assert killed not in [pid for pid, _, _ in loop_backends(mine)]
    assert code == 0, out
    # The cut reached the runner (a slot's may show only if that slot gets another job).
    noticed = {
        "heartbeat": "heartbeat of runner",
        "listener": "LISTEN connection lost",
        "pipeline": "transient database error",
    }
    assert target == "slot" or noticed[target] in out, out
    assert succeeded() == ITEMS + 4, out
    assert sql(
        "select count(*), count(distinct work_id) from demo_effect where key = 'started'"
    ) == [(ITEMS + 4, ITEMS + 4)], out
    assert sql("select count(*) from durable_work_dispatch") == [(0,)], out
