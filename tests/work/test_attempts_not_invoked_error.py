"""docs/work.md "Inspection": ``work.attempts()`` gives every admitted attempt (one per permit)
and, for a failed attempt, the failure event and error that ended *that* attempt. An attempt
handed back before it started (``not_invoked``: permit ``proven_no_effect``, no slot consumed)
gives its attempt number back, so the next admission runs under the same number; its failure
must not be shown as the handed-back permit's. Before, the query took the first history row with
an error and that attempt number after the admission, so the permit that never ran was shown
failed with the next permit's error."""

from __future__ import annotations

import pytest

from durable_schedule import work
from tests.work.conftest import permits, run_pass

pytestmark = pytest.mark.django_db


def test_attempts__a_handed_back_permit_keeps_no_later_failure(clock, define):
    d = define("t.attempts_handed_back")
    calls: list[str] = []

    @d.executor
    def run(ctx, payload):
        calls.append(payload["k"])
        if len(calls) == 1:
            raise KeyboardInterrupt  # stops the worker: the rest of its batch is handed back
        raise RuntimeError(f"provider down ({payload['k']})")

    first = d.enqueue(scope="tenant-a", command="c", idempotency_key="a", payload={"k": "a"})
    second = d.enqueue(scope="tenant-a", command="c", idempotency_key="b", payload={"k": "b"})
    with pytest.raises(KeyboardInterrupt):
        run_pass(batch=2)
    handed_back = second if calls == ["a"] else first
    assert [p[2] for p in permits(handed_back.work_id)] == ["proven_no_effect"]
    run_pass(max_items=1, batch=1)  # the handed-back Work runs again (attempt 1) and fails
    one, two = work.attempts("tenant-a", handed_back.work_id)
    assert (one.permit_no, one.attempt, one.outcome) == (1, 1, "proven_no_effect")
    assert (one.failure_event, one.error) == (None, None)
    assert (two.permit_no, two.attempt, two.outcome) == (2, 1, "failed")
    assert two.failure_event == "retry_scheduled"
    assert two.error["code"] == "DS216" and "provider down" in two.error["message"]
