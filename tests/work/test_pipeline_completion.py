"""The group commit's one statement (``complete_many``) locks, samples the clock and completes
the successes whose lease holds and whose deadline has not passed; whatever it leaves is locked
again and recorded item by item in the same transaction. One batch mixing the three cases."""

from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest
from django.db import connection

from durable_schedule import work
from tests.conftest import T0, database_url
from tests.work.conftest import (
    OWNER,
    StatementLog,
    history,
    permits,
    rows,
    run_pass,
    work_row,
)

pytestmark = pytest.mark.django_db(transaction=True)

MIN = timedelta(minutes=1)
POLICY = work.ExecutionPolicy(work.RetryPolicy(lease_duration=MIN,
                                               renewal_cadence=timedelta(seconds=15)))


def _owner_sql(statement: str, params=()):
    with psycopg.connect(database_url(), autocommit=True) as conn:
        conn.execute(statement, params)


def test_group_commit__completes_held_successes_and_fences_the_rest(committed_clock, define):
    d = define("test.completion", policy=POLICY)

    @d.executor
    def run(ctx, payload):
        if payload["n"] == 1:  # another worker takes this row over while the batch runs
            _owner_sql("update durable_work set lease_owner = 'thief', "
                       "lease_generation = lease_generation + 1 where work_id = %s",
                       (ctx.work_id,))
        if payload["n"] == 2:  # this executor finishes exactly at its deadline
            committed_clock.set(T0 + 30 * MIN)
        return {"n": payload["n"]}

    ids = [d.enqueue(scope="tenant-a", command=f"c-{n}", idempotency_key=f"k-{n}",
                     payload={"n": n}, deadline=T0 + (30 if n == 2 else 60) * MIN).work_id
           for n in range(3)]
    counts = run_pass(batch=3, max_items=3)  # one batch, no second claim
    assert (counts.admitted, counts.succeeded, counts.lost, counts.quarantined,
            counts.expired) == (3, 1, 1, 2, 1)
    # Held, before the deadline: completed by the one statement, as the per-item path would.
    assert work_row(ids[0], "state", "result::jsonb ->> 'n'") == ("succeeded", "0")
    assert permits(ids[0]) == [(1, 1, "succeeded", "executor")]
    assert history(ids[0]) == ["accepted", "admitted", "succeeded"]
    [(detail, actor)] = rows("select detail, actor from durable_work_history"
                             " where work_id = %s and event = 'succeeded'", (ids[0],))
    assert (json.loads(detail), actor) == ({"from": "running", "to": "succeeded",
                                            "permit_no": 1}, OWNER)
    # Lost: the thief's row is untouched, the result kept only as evidence.
    assert work_row(ids[1], "state", "lease_owner") == ("running", "thief")
    assert permits(ids[1]) == [(1, 1, None, None)]
    # At the deadline: never success; the late result is quarantined and the Work expired.
    assert work_row(ids[2], "state", "execution_admission_closed_reason") == (
        "expired", "deadline")
    assert permits(ids[2]) == [(1, 1, "quarantined", "runtime")]
    assert rows("select reason from durable_work_quarantine where work_id = %s order by id",
                (ids[2],)) == [("late_result",)]
    with connection.cursor() as cur:  # no dispatch row left for the two finished ones
        cur.execute("select count(*) from durable_work_dispatch d join durable_work w"
                    " on w.id = d.work_ref where w.work_id = any(%s)", ([ids[0], ids[2]],))
        assert cur.fetchone()[0] == 0


def test_claim_statement__ends_at_the_own_role_and_the_entry_needs_no_switch_back(
        committed_clock, define):
    """The batched claim runs as durable_runtime and returns to the connection's own role in
    the same statement; the scope entry that follows is the routed one, without the separate
    switch back, and row-level security still admits the claimed rows."""
    from durable_schedule.store.transactions import routed_batch
    from durable_schedule.work.pipeline import admit_batch
    from durable_schedule.work.runtime import Options

    d = define("test.claim_role")
    d.executor(lambda ctx, payload: {})
    d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={})
    with connection.cursor() as cur:
        cur.execute("select current_user")
        own = cur.fetchone()[0]
    with routed_batch() as (cur, enter):
        cur.execute("select current_user")
        assert cur.fetchone()[0] == "durable_runtime"
        assert enter.own_role == own
    statements = StatementLog()
    with connection.execute_wrapper(statements):
        admission = admit_batch(Options(OWNER, False, "default"), 30, 10)
    assert len(admission.claims) == 1 and len(admission.admitted) == 1
    assert not [s for s in statements.sql if s.startswith("select set_config('role', %s, true)")]
    assert statements.sql.count("select durable_schedule_enter_routed(%s)") == 1
    claim = next(s for s in statements.sql if "claim_work_dispatch" in s)
    assert "set_config('role', %(own_role)s, true)" in claim
