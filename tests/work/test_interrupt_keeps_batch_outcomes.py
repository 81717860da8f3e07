"""An executor that raises KeyboardInterrupt or SystemExit (or Ctrl-C in a worker run without
``--loop``) stops the worker, and the interrupted attempt records no outcome (recovered after its
lease, as a crash). The attempts of the same batch that already finished are kept: their
outcomes are committed before the interrupt leaves the pass, and the admitted attempts the
stopping pass will not start are handed back (permit ``proven_no_effect``, due again at once),
in the sequential pass as in the concurrent one."""

from __future__ import annotations

import threading
import time

import pytest

from durable_schedule import work
from durable_schedule.work import concurrency
from tests.work.conftest import dispatch, permits, run_pass, work_row

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupt__finished_attempts_of_the_batch_are_committed(
    clock, define, interrupt, concurrency
):
    d = define("t.interrupt_batch")
    ran: list[str] = []
    lock = threading.Lock()

    @d.executor
    def run(ctx, payload):
        with lock:
            ran.append(payload["k"])
            second = len(ran) == 2
        if second:  # one attempt of the batch has run before this one
            raise interrupt
        return {"k": payload["k"]}

    ids = {
        k: d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={"k": k}).work_id
        for k in ("a", "b", "c", "d", "e", "f")
    }
    with pytest.raises(interrupt):
        run_pass(batch=6, concurrency=concurrency)
    first, interrupted = ran[0], ran[1]
    # The attempt that finished before the interrupt: its outcome is committed.
    assert work_row(ids[first], "state") == ("succeeded",)
    assert permits(ids[first]) == [(1, 1, "succeeded", "executor")]
    # The interrupted attempt: no outcome, its permit unresolved, recovered after its lease.
    assert work_row(ids[interrupted], "state") == ("running",)
    assert [p[2] for p in permits(ids[interrupted])] == [None]
    for k, work_id in ids.items():
        if k in (first, interrupted):
            continue
        if k in ran:  # started by another slot before the interrupt: its outcome is kept
            assert work_row(work_id, "state") == ("succeeded",), k
        else:  # not started: handed back, no effect, due again at once
            assert work_row(work_id, "state") == ("pending",), k
            assert [p[2] for p in permits(work_id)] == ["proven_no_effect"], k
            assert dispatch(work_id)[1] is None, k


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupt__the_other_slots_start_nothing_after_it(clock, define, interrupt, monkeypatch):
    # Before: the pass raised the interrupt only after every admitted attempt of the batch had
    # run -- the slots went on starting them after the worker was told to stop.
    d = define("t.interrupt_slots")
    ran: list[str] = []
    lock = threading.Lock()
    both_started = threading.Event()
    handed_back: list = []
    commit = concurrency.commit_outcomes

    def spy(results, opts, tally):  # what the pipeline commits (on its own connection)
        handed_back.extend(a for a, o in results if o.kind == "handed_back")
        return commit(results, opts, tally)

    monkeypatch.setattr(concurrency, "commit_outcomes", spy)

    @d.executor
    def run(ctx, payload):
        with lock:
            ran.append(payload["k"])
            nth = len(ran)
        if nth == 1:
            both_started.wait(30)  # a bound against a hang, not a timing
            raise interrupt
        if nth == 2:
            both_started.set()
            # Wait (bounded) until the pipeline has committed the four others as handed back
            # -- or, as before, until a slot started one of them.
            for _ in range(3000):
                if len(handed_back) == 4 or len(ran) > 2:
                    break
                time.sleep(0.01)
        return {"k": payload["k"]}

    ids = {
        k: d.enqueue(scope="tenant-a", command="c", idempotency_key=k, payload={"k": k}).work_id
        for k in ("a", "b", "c", "d", "e", "f")
    }
    with pytest.raises(interrupt):
        run_pass(batch=6, concurrency=2)
    assert len(ran) == 2, ran
    interrupted, finished = ran
    assert work_row(ids[interrupted], "state") == ("running",)
    assert work_row(ids[finished], "state") == ("succeeded",)
    for k, work_id in ids.items():
        if k not in ran:
            assert work_row(work_id, "state") == ("pending",), k
            assert [p[2] for p in permits(work_id)] == ["proven_no_effect"], k
            assert dispatch(work_id)[1] is None, k


def test_interrupt__claims_of_the_batch_not_processed_are_released(clock, define):
    # A reconcile_before_retry row of the batch is processed per item after the batch: an
    # interrupt before it releases its claim, so another worker can take it at once (before:
    # its claim held the row until the claim lease ran out).
    plain = define("t.interrupt_plain")
    careful = define("t.interrupt_careful", safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY)

    @plain.executor
    def run(ctx, payload):
        raise KeyboardInterrupt

    careful.executor(lambda ctx, payload: {"ok": True})
    first = plain.enqueue(scope="tenant-a", command="c", idempotency_key="p", payload={}).work_id
    later = careful.enqueue(scope="tenant-a", command="c", idempotency_key="r", payload={}).work_id
    with pytest.raises(KeyboardInterrupt):
        run_pass(batch=2)
    assert work_row(first, "state") == ("running",)
    assert work_row(later, "state") == ("pending",)
    assert permits(later) == []
    assert dispatch(later)[1] is None  # released, claimable now
