"""docs/work.md "What an executor raises": an executor's KeyboardInterrupt or SystemExit stops
the worker, and the rest of its batch is not lost with it -- "unprocessed claims are released",
so another worker can take them at once. ``reconcile_before_retry`` rows of a claimed batch are
processed one at a time after the batch (per item): an interrupt raised by one of them left the
claims of the per-item rows after it held until their claim lease ran out (the concurrent pass
already released them)."""

from __future__ import annotations

import pytest

from durable_schedule import work
from tests.work.conftest import dispatch, permits, run_pass, work_row

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupt_in_a_per_item_row__releases_the_claims_after_it(clock, define, interrupt):
    careful = define("t.interrupt_per_item", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)
    ran: list[str] = []

    @careful.executor
    def run(ctx, payload):
        ran.append(payload["k"])
        if len(ran) == 1:
            raise interrupt
        return {"k": payload["k"]}

    ids = {k: careful.enqueue(scope="tenant-a", command="c", idempotency_key=k,
                              payload={"k": k}).work_id for k in ("a", "b", "c")}
    with pytest.raises(interrupt):
        run_pass(batch=3)
    assert len(ran) == 1
    [interrupted] = ran
    assert work_row(ids[interrupted], "state") == ("running",)  # recovered after its lease
    for k, work_id in ids.items():
        if k == interrupted:
            continue
        assert work_row(work_id, "state") == ("pending",), k
        assert permits(work_id) == [], k
        assert dispatch(work_id)[1] is None, k  # released, claimable now
