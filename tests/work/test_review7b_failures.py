"""An executor's or reconciler's odd failure is recorded like any other: jsonb refuses a NUL
character and an unpaired surrogate, and ``str()``/``repr()`` of user objects may raise. Before
the fix each of these failed the outcome's own transaction, so the worker pass raised and the
attempt stayed ``running`` until its lease ran out (and then failed the next pass the same way).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.work import codec
from tests.conftest import T0
from tests.work.conftest import Crash, history, run_pass, work_row

pytestmark = pytest.mark.django_db

MIN = timedelta(minutes=1)


class StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("no text for this one")


class ReprRaises:
    def __repr__(self):
        raise RuntimeError("no repr either")


def _accept(d) -> str:
    return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id


@pytest.mark.parametrize(("exc", "stored"), [
    (ValueError("before \x00 after"), "before \\x00 after"),
    (ValueError("bytes \udcff decoded"), "bytes \\udcff decoded"),
    (StrRaises("x"), "<StrRaises whose str() raised RuntimeError>"),
], ids=["nul", "lone-surrogate", "str-raises"])
def test_failure__an_unstorable_message_is_escaped_and_the_attempt_is_retried(clock, define,
                                                                               exc, stored):
    d = define("t.odd_failure")

    @d.executor
    def run(ctx, payload):
        raise exc

    work_id = _accept(d)
    counts = run_pass()
    assert (counts.admitted, counts.retried) == (1, 1)
    state, attempt, last_error = work_row(work_id, "state", "attempt", "last_error")
    last_error = codec.loads(last_error)
    assert (state, attempt) == ("pending", 1)
    assert last_error["message"] == stored
    assert last_error["class"] == f"{type(exc).__module__}.{type(exc).__qualname__}"
    assert "\x00" not in last_error["traceback"]
    assert history(work_id)[-1] == "retry_scheduled"
    [first] = work.attempts("tenant-a", work_id)
    assert first.outcome == "failed" and first.exception_class == last_error["class"]


def _crashed_reconcile_before_retry(define, reconcile):
    d = define("t.odd_reconcile", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    crash = [True]

    @d.executor
    def run(ctx, payload):
        if crash.pop() if crash else False:
            raise Crash
        return {"ok": True}

    d.reconciler(reconcile)
    work_id = _accept(d)
    with pytest.raises(Crash):
        run_pass()
    return work_id


@pytest.mark.parametrize(("answer", "stored"), [
    (work.Unknown("provider said \x00"), "provider said \\x00"),
    (ReprRaises(), "the reconciler returned <ReprRaises whose repr() raised RuntimeError>, "
                   "not Applied / NotApplied / Unknown"),
], ids=["unknown-reason-nul", "invalid-verdict-repr-raises"])
def test_reconcile__an_unstorable_answer_still_suspends_the_work(clock, define, answer, stored):
    work_id = _crashed_reconcile_before_retry(define, lambda ctx, payload: answer)
    clock.set(T0 + 10 * MIN)  # past the crashed attempt's lease
    counts = run_pass()
    assert (counts.reconciled, counts.suspended) == (1, 1)
    state, reason, last_error = work_row(work_id, "state", "suspension_reason", "last_error")
    last_error = codec.loads(last_error)
    assert (state, reason) == ("suspended", "reconciliation_unknown")
    assert last_error["message"] == stored
