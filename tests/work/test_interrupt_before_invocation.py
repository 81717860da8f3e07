"""An interrupt (Ctrl-C in a run without ``--loop``) that lands after an admitted attempt's
permit committed but before its executor was called -- here from the pass's own stop check
right before the invocation -- left that attempt ``running`` with an unresolved permit, as if
it had crashed mid-effect: recovered only after its lease, and an idempotent Work lost an
attempt it never ran. Not started, it is handed back like the rest of the batch (permit
``proven_no_effect``, due again at once)."""

from __future__ import annotations

import threading

import pytest

from tests.work.conftest import permits, run_pass, work_row

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("concurrency", [1, 2])
def test_interrupt_before_the_first_invocation__the_attempt_is_handed_back(
        clock, define, concurrency):
    d = define(f"t.interrupt_before_invocation_{concurrency}")
    ran = []
    d.executor(lambda ctx, payload: ran.append(payload["k"]))
    ids = [d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={"k": k}).work_id
           for k in ("a", "b", "c")]
    checks = []
    lock = threading.Lock()

    def stop() -> bool:
        with lock:
            checks.append(1)
            if len(checks) >= 2:  # the checks before the invocations (the first: the claim)
                raise KeyboardInterrupt
        return False

    with pytest.raises(KeyboardInterrupt):
        run_pass(batch=3, stop=stop, concurrency=concurrency)
    assert ran == []
    for work_id in ids:
        assert work_row(work_id, "state") == ("pending",)
        assert [p[2] for p in permits(work_id)] == ["proven_no_effect"]
