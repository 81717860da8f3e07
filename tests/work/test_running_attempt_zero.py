"""docs/work.md "States": a ``running`` Work has an attempt in flight, so its attempt counter is
at least 1; only a hand-edited row gets ``running`` with ``attempt = 0`` (the table's constraint
allows it). Its lease ended, so the worker recovers it as any lost attempt: the lost attempt is
counted (the counter is repaired to the attempt of its permit, at least 1) and the retry policy
decides. Before, the recovery asked the retry policy what follows "attempt 0" and raised DS406 out
of the pass, on every pass that claimed the row: one such row stopped the worker."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from tests.work.conftest import MIN, history, permits, rows, run_pass, work_row
from tests.work.test_recovery import Provider, accept, crash_first_attempt
from tests.work.test_running_without_lease import drop_lease

pytestmark = pytest.mark.django_db


def zero_attempt(work_id) -> None:
    with connection.cursor() as cur:  # by SQL, as the owner: the hand edit
        cur.execute("update durable_work set attempt = 0 where work_id = %s", [work_id])


def retry_detail(work_id) -> dict:
    found = rows("select detail from durable_work_history where work_id = %s and event ="
                 " 'retry_scheduled' order by id", (work_id,))
    assert len(found) == 1, found
    return json.loads(found[0][0]) if isinstance(found[0][0], str) else found[0][0]


@pytest.mark.parametrize("safety", ["idempotent", "reconcile_before_retry"])
def test_running_with_attempt_zero__is_recovered_not_a_crash_of_the_pass(clock, define, safety):
    p = Provider()
    d = define(f"t.zero_{safety}", safety=safety)
    d.executor(p.execute)
    d.reconciler(p.reconcile)
    work_id = accept(d)
    crash_first_attempt(p, "before")
    zero_attempt(work_id)
    clock.advance(MIN)  # the lease (1 min) ends
    counts = run_pass()
    assert (counts.recovered, counts.retried) == (1, 1)
    assert counts.reconciled == (1 if safety == "reconcile_before_retry" else 0)
    # the lost attempt is counted: the counter is the attempt of its permit again
    assert work_row(work_id, "state", "attempt", "lease_owner") == ("pending", 1, None)
    assert retry_detail(work_id)["attempt_repaired"] == {"from": 0, "to": 1}
    clock.advance(MIN)
    assert run_pass().succeeded == 1
    assert work_row(work_id, "state", "attempt") == ("succeeded", 2)
    assert [attempt for _no, attempt, _o, _s in permits(work_id)] == [1, 2]
    assert history(work_id)[-1] == "succeeded"


@pytest.mark.parametrize("tamper", [zero_attempt, drop_lease], ids=["attempt_zero", "no_lease"])
def test_a_hand_edited_running_row__other_work_of_the_pass_still_runs(clock, define, tamper):
    p = Provider()
    d = define(f"t.{tamper.__name__}_batch")
    d.executor(p.execute)
    work_id = accept(d)
    crash_first_attempt(p, "before")
    tamper(work_id)
    clock.advance(MIN)
    other = d.enqueue(scope="tenant-a", command="other", idempotency_key="k",
                      payload={}).work_id
    run_pass()
    assert work_row(other, "state") == ("succeeded",)
    assert work_row(work_id, "state")[0] in ("pending", "succeeded")
