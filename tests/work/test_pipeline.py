"""Issue 16 item 2: batched Work. A batch is claimed and admitted in one transaction (every
permit committed before the first invocation); the outcomes are group-committed in one
statement, each row fenced by its own lease; a lease lost mid-batch fences exactly its item."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from durable_schedule import work
from tests.conftest import database_url
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


def _owner_sql(statement: str, params=()):
    """Run as the owner on a separate connection, committed (what another process sees)."""
    with psycopg.connect(database_url(), autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def _enqueue(d, n: int, payload=None) -> list:
    return [d.enqueue(scope="tenant-a", command=f"c-{i}", idempotency_key=f"k-{i}",
                      payload=payload(i) if payload else {"n": i}).work_id for i in range(n)]


def test_pipeline__every_permit_of_the_batch_commits_before_the_first_invocation(
        committed_clock, define):
    d = define("test.batched")
    seen = []

    @d.executor
    def run(ctx, payload):
        # Another connection sees only committed rows: all five permits are there already.
        seen.append(_owner_sql("select count(*) from durable_work_permit")[0][0])
        return {"n": payload["n"]}

    ids = _enqueue(d, 5)
    counts = run_pass(batch=5)
    assert (counts.claimed, counts.admitted, counts.succeeded) == (5, 5, 5)
    assert seen == [5, 5, 5, 5, 5]
    for work_id in ids:
        assert permits(work_id) == [(1, 1, "succeeded", "executor")]
        assert history(work_id) == ["accepted", "admitted", "succeeded"]


def test_pipeline__a_batch_is_one_admission_and_one_completion_statement(
        committed_clock, define):
    d = define("test.grouped")
    d.executor(lambda ctx, payload: {"n": payload["n"]})
    _enqueue(d, 8)
    statements = StatementLog()
    with connection.execute_wrapper(statements):
        assert run_pass(batch=8).succeeded == 8
    admissions = [s for s in statements.sql if "name: admit_many" in s or (
        "'admitted', m.attempt" in s)]
    completions = [s for s in statements.sql if "SET state = 'succeeded'" in s]
    assert len(admissions) == 1 and len(completions) == 1
    assert not [s for s in statements.sql if "permit_new AS" in s and "unnest" not in s]
    # Two batch transactions (claim + admission, group commit) and the final empty claim.
    assert len(statements.sql) <= 20, statements.sql


def test_pipeline__a_lease_lost_mid_batch_fences_exactly_its_item(committed_clock, define):
    d = define("test.stolen")

    @d.executor
    def run(ctx, payload):
        if payload["n"] == 1:
            # Another worker takes this one row over while the batch runs.
            _owner_sql("update durable_work set lease_owner = 'thief', "
                       "lease_generation = lease_generation + 1 where work_id = %s "
                       "returning 1", (ctx.work_id,))
        return {"n": payload["n"]}

    ids = _enqueue(d, 3)
    counts = run_pass(batch=3)
    assert (counts.admitted, counts.succeeded, counts.lost, counts.quarantined) == (3, 2, 1, 1)
    assert work_row(ids[0], "state") == ("succeeded",)
    assert work_row(ids[2], "state") == ("succeeded",)
    # The stolen one is the thief's now: untouched, its result kept only as evidence.
    assert work_row(ids[1], "state", "lease_owner") == ("running", "thief")
    assert permits(ids[1]) == [(1, 1, None, None)]
    assert rows("select reason, lease_owner, result::jsonb -> 'n' from durable_work_quarantine"
                " where work_id = %s", (ids[1],)) == [("lease_lost", OWNER, "1")]


def test_pipeline__failures_and_successes_share_a_batch(committed_clock, define):
    d = define("test.mixed_batch")

    @d.executor
    def run(ctx, payload):
        if payload["n"] % 2:
            raise ValueError(f"odd {payload['n']}")
        return {"n": payload["n"]}

    ids = _enqueue(d, 4)
    counts = run_pass(batch=4)
    assert (counts.succeeded, counts.retried) == (2, 2)
    assert [work_row(i, "state")[0] for i in ids] == ["succeeded", "pending"] * 2
    assert work.get("tenant-a", ids[1]).last_error["class"] == "builtins.ValueError"


def test_pipeline__reconcile_before_retry_work_is_admitted_per_item(committed_clock, define):
    """Its permit commits just before its own invocation (the short uncertain window), after
    the idempotent rows of the same claim were admitted and completed together."""
    plain = define("test.plain")
    plain.executor(lambda ctx, payload: {})
    careful = define("test.careful", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    seen = []

    @careful.executor
    def run(ctx, payload):
        seen.append(_owner_sql("select state from durable_work where work_name = 'test.plain'"
                               " order by id"))
        return {}

    careful.reconciler(lambda ctx, payload: work.NotApplied())
    _enqueue(plain, 2)
    careful.enqueue(scope="tenant-a", command="careful", idempotency_key="k", payload={})
    assert run_pass(batch=10).succeeded == 3
    assert seen == [[("succeeded",), ("succeeded",)]]


def test_pipeline__a_stop_mid_batch_hands_admitted_attempts_back(committed_clock, define):
    d = define("test.stopped")
    ran = []
    d.executor(lambda ctx, payload: ran.append(payload["n"]) or {})
    ids = _enqueue(d, 4)
    counts = run_pass(batch=4, stop=lambda: len(ran) >= 1)
    assert ran == [0] and counts.succeeded == 1 and counts.released == 3
    for work_id in ids[1:]:
        assert work_row(work_id, "state", "attempt") == ("pending", 0)
        assert permits(work_id) == [(1, 1, "proven_no_effect", "runtime")]
    # Due again at once: the next pass runs them.
    assert run_pass(batch=4).succeeded == 3
