"""docs/work.md "Provider safety": a reconciler may return a verdict's bare class
(``work.Applied``, ``work.NotApplied``, ``work.Unknown``, without parentheses): each is taken as
its instance without arguments. Before, the bare ``NotApplied`` and ``Unknown`` were accepted
but the bare ``Applied`` counted as no verdict at all (Unknown), so an effect the reconciler had
found suspended the Work for an operator instead of succeeding."""

from __future__ import annotations

import pytest

from durable_schedule import work
from tests.conftest import T0
from tests.work.conftest import MIN, Crash, history, permits, run_pass, work_row

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("bare", "state", "outcome", "event"), [
    (work.Applied, "succeeded", "applied", "reconciled_applied"),
    (work.NotApplied, "pending", "not_applied", "retry_scheduled"),
    (work.Unknown, "suspended", None, "suspended"),
])
def test_a_bare_verdict_class_is_taken_as_its_instance(clock, define, bare, state, outcome,
                                                        event):
    d = define(f"t.bare_{bare.__name__}", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    crashed = []

    @d.executor
    def execute(ctx, payload):
        if not crashed:
            crashed.append(ctx.attempt)
            raise Crash
        return {"attempt": ctx.attempt}

    d.reconciler(lambda ctx, payload: bare)
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(Crash):
        run_pass()
    clock.set(T0 + 5 * MIN)
    counts = run_pass()
    assert counts.reconciled == 1
    assert work_row(work_id, "state") == (state,)
    assert permits(work_id)[0][2:] == (outcome, None if outcome is None else "reconciler")
    assert history(work_id)[-1] == event
