"""docs/work.md "States": a ``running`` Work holds a lease; one without any (lease owner and
expiry both NULL -- the store's constraint allows the pair, only a hand-edited row gets there) has
no live lease, so nothing protects an attempt any more and the worker recovers it as an ended
lease, as ``work.cancel`` already counts it lapsed. Before, the claim's decision compared the
missing expiry with the clock and raised a bare TypeError out of the pass, on every pass that
claimed the row: one such row stopped the worker."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.work.conftest import MIN, permits, run_pass, work_row
from tests.work.test_recovery import Provider, accept, crash_first_attempt

pytestmark = pytest.mark.django_db


def drop_lease(work_id) -> None:
    with connection.cursor() as cur:  # by SQL, as the owner: the hand edit
        cur.execute("update durable_work set lease_owner = null, lease_expires_at = null"
                    " where work_id = %s", [work_id])


@pytest.mark.parametrize("safety", ["idempotent", "reconcile_before_retry"])
def test_running_without_a_lease__is_recovered_not_a_crash_of_the_pass(clock, define, safety):
    p = Provider()
    d = define(f"t.no_lease_{safety}", safety=safety)
    d.executor(p.execute)
    d.reconciler(p.reconcile)
    work_id = accept(d)
    crash_first_attempt(p, "before")
    drop_lease(work_id)
    clock.advance(MIN)  # the dispatch row is due at the old lease end
    counts = run_pass()
    assert (counts.recovered, counts.retried) == (1, 1)
    assert counts.reconciled == (1 if safety == "reconcile_before_retry" else 0)
    assert work_row(work_id, "state", "lease_owner") == ("pending", None)
    # reconcile_before_retry: judged first (no effect happened); idempotent: stays ambiguous
    assert permits(work_id)[0][2] == ("not_applied" if safety == "reconcile_before_retry"
                                      else None)
