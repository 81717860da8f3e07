"""Adaptive claim size (issue 16 targets; durable_schedule/work/sizing.py): ``batch`` is the
largest claim; each claim is sized from the measured invocation time of recent attempts so an
admitted attempt waits at most the wait budget; an admitted attempt that waited past its own
local cancel point is handed back unrun, in the sequential path as with ``--concurrency``.

Durations come from the runtime's monotonic clock seam (durable_schedule/work/clock.py): an
executor "takes" seconds by advancing a controlled clock, nothing sleeps."""

from __future__ import annotations

import inspect
import math
import os
import threading
from datetime import timedelta

import psycopg
import pytest
from django.core.management import CommandError, call_command

from durable_schedule import work
from durable_schedule.errors import InvalidWaitBudget
from durable_schedule.work import clock, pipeline, sizing
from durable_schedule.work.sizing import INITIAL_CLAIM, ClaimSizer
from tests.conftest import database_url
from tests.work.conftest import count, dispatch, history, permits, rows, run_pass, work_row


class FakeClock:
    """A monotonic source that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _run_batch(sizer: ClaimSizer, maximum: int, seconds: float, slots: int = 1,
               window: float | None = None) -> int:
    """Ask for a claim, then "invoke" every item of it for ``seconds``; the size asked for."""
    n = sizer.next_size(maximum, slots)
    for _ in range(n):
        sizer.record(seconds, window)
    return n


# ------------------------------------------------------------------ the sizer alone


def test_sizing__fast_items_grow_the_claim_to_the_maximum():
    sizer = ClaimSizer()
    sizes = [_run_batch(sizer, 100, 0.0001) for _ in range(6)]
    # Unmeasured first claim, then at most doubling per claim, up to the maximum.
    assert sizes == [INITIAL_CLAIM, 20, 40, 80, 100, 100]


def test_sizing__a_maximum_below_the_first_claim_is_respected():
    sizer = ClaimSizer()
    assert [_run_batch(sizer, 4, 0.0001) for _ in range(3)] == [4, 4, 4]


def test_sizing__slow_items_shrink_the_claim_to_one_or_to_the_slots():
    sequential = ClaimSizer()
    assert [_run_batch(sequential, 100, 2.0) for _ in range(3)] == [INITIAL_CLAIM, 1, 1]
    concurrent = ClaimSizer()
    assert [_run_batch(concurrent, 100, 2.0, slots=4) for _ in range(3)] == [
        INITIAL_CLAIM, 4, 4]
    # Fewer rows allowed than slots: the maximum wins.
    assert ClaimSizer().next_size(3, slots=8) == 3


def test_sizing__with_slots_the_claim_is_slots_times_budget_over_duration():
    sizer = ClaimSizer(wait_budget=0.5)
    _run_batch(sizer, 1000, 0.01, slots=20)  # first claim, measured at 10 ms each
    # 20 slots x 0.5 s / 10 ms = 1,000, capped by doubling from the first claim (20).
    assert sizer.next_size(1000, slots=20) == 40
    sizer = ClaimSizer(wait_budget=0.5)
    for _ in range(8):
        _run_batch(sizer, 1000, 0.05, slots=20)
    assert sizer.next_size(1000, slots=20) == 200  # 20 x 0.5 / 0.05


def test_sizing__a_sudden_slow_item_shrinks_the_next_claim_at_once():
    sizer = ClaimSizer(wait_budget=0.5)
    while sizer.last_size < 100:
        _run_batch(sizer, 100, 0.0001)
    assert sizer.next_size(100) == 100
    for _ in range(99):
        sizer.record(0.0001)
    sizer.record(0.25)  # one slow item among 99 fast ones
    # The worst of the last batch counts: 0.5 s / 0.25 s.
    assert sizer.next_size(100) == 2


def test_sizing__after_the_slow_items_stop_the_claim_grows_back():
    sizer = ClaimSizer(wait_budget=0.5)
    _run_batch(sizer, 100, 1.0)
    assert _run_batch(sizer, 100, 0.001) == 1  # still sized by the slow batch's worst
    # The moving mean decays by 1 - EWMA_WEIGHT per measured claim; the size follows it.
    sizes = [_run_batch(sizer, 100, 0.001) for _ in range(30)]
    assert sizes == sorted(sizes) and sizes[-1] == 100
    assert all(b <= 2 * a for a, b in zip([1, *sizes], sizes, strict=False))


def test_sizing__the_budget_is_at_most_a_fraction_of_the_shortest_window():
    sizer = ClaimSizer(wait_budget=0.5)
    for _ in range(6):
        _run_batch(sizer, 100, 0.01, window=1.0)  # a one-second lease (or deadline) window
    assert sizer.budget() == pytest.approx(sizing.LEASE_FRACTION * 1.0)
    assert sizer.next_size(100) == 10  # 0.1 s / 10 ms, not 0.5 s / 10 ms
    sizer.record(0.01, 60.0)
    assert sizer.next_size(100) == 20  # a long window again: the wait budget bounds it


def test_sizing__nothing_measured_keeps_the_estimate():
    sizer = ClaimSizer()
    _run_batch(sizer, 100, 1.0)
    assert sizer.next_size(100) == 1
    # A claim that ran nothing (refused, handed back) says nothing about durations.
    assert sizer.next_size(100) == 1


def test_sizing__instant_items_on_a_coarse_clock_never_break_the_sizing():
    # A clock whose resolution hides a fast executor (durations read as exactly 0.0) makes the
    # moving mean decay into the subnormal floats (where it stays: 0.7 x 5e-324 rounds back up),
    # and budget / estimate overflows to infinity: the claim stays the maximum, no
    # OverflowError ends every pass from then on.
    sizer = ClaimSizer(wait_budget=0.5)
    _run_batch(sizer, 100, 0.001)
    sizes = {_run_batch(sizer, 100, 0.0) for _ in range(2_200)}
    assert 0 < sizer.mean < 1e-308 and sizes == {20, 40, 80, 100}
    assert sizer.next_size(100, slots=4) == 100


def test_sizing__one_sizer_per_alias_and_queue_set_kept_across_passes():
    a = sizing.sizer_for("default", None)
    assert sizing.sizer_for("default", None) is a
    assert sizing.sizer_for("default", ("mail",)) is not a
    assert sizing.sizer_for("other", None) is not a


def test_sizing__a_pass_with_another_wait_budget_does_not_change_an_earlier_passes_sizer():
    # two passes of one process (threads, a --loop runner beside an in-process caller) with
    # different budgets: each keeps its own budget instead of the last caller's
    short = sizing.sizer_for("default", ("budgets",), 0.2)
    long = sizing.sizer_for("default", ("budgets",), 5.0)
    assert short is not long
    assert short.wait_budget == 0.2 and long.wait_budget == 5.0
    assert sizing.sizer_for("default", ("budgets",), 0.2) is short
    assert short.wait_budget == 0.2
    # an equal budget given as an int is the same sizer
    assert sizing.sizer_for("default", ("budgets",), 5) is long


def test_sizing__a_new_budget_on_every_pass_does_not_grow_the_sizers_without_bound():
    sizing.forget()
    first = sizing.sizer_for("default", None, 0.001)
    for i in range(1, 3 * sizing.MAX_SIZERS):
        sizing.sizer_for("default", None, 0.001 + i / 1000)
    assert len(sizing._sizers) == sizing.MAX_SIZERS
    assert sizing.sizer_for("default", None, 0.001) is not first  # the oldest was dropped


@pytest.mark.parametrize("bad", [0, -1, 0.0, 60.5, math.nan, math.inf, True, "1", None])
def test_sizing__a_bad_wait_budget_is_refused_with_ds246(bad):
    with pytest.raises(InvalidWaitBudget) as refused:
        ClaimSizer(wait_budget=bad)
    assert refused.value.code == "DS246"


# ------------------------------------------------------------------ passes


@pytest.mark.django_db(transaction=True)
def test_sizing__a_bad_wait_budget_refuses_the_pass_and_claims_nothing(committed_clock, define):
    d = define("test.sized")
    d.executor(lambda ctx, payload: {})
    d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={})
    with pytest.raises(InvalidWaitBudget):
        run_pass(wait_budget=0)
    with pytest.raises(CommandError, match="DS246"):
        call_command("process_work", "--wait-budget", "-1", verbosity=0)
    assert rows("select lease_owner from durable_work_dispatch") == [(None,)]
    assert count("durable_work_permit") == 0


def _enqueue(d, n: int) -> list:
    return [d.enqueue(scope="tenant-a", command=f"c-{i}", idempotency_key=f"k-{i}",
                      payload={"n": i}).work_id for i in range(n)]


def _committed(sql: str, params=()):
    """Read as the owner on a separate connection: what another process sees."""
    with psycopg.connect(database_url(), autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _running() -> int:
    """Admitted attempts not recorded yet (a sequential batch's outcomes commit together, so
    every attempt of a batch sees the whole batch running)."""
    return _committed("select count(*) from durable_work where state = 'running'")[0][0]


@pytest.mark.django_db(transaction=True)
def test_sizing__a_pass_of_slow_items_admits_no_more_than_the_budget_allows(
        committed_clock, define):
    d = define("test.slow")
    fake = FakeClock()
    admitted_with = []

    @d.executor
    def slow(ctx, payload):
        admitted_with.append(_running())  # this attempt and the others admitted with it
        fake.advance(0.3)  # each invocation "takes" 0.3 s
        return {}

    _enqueue(d, 14)
    with clock.controlled(fake):
        counts = run_pass(max_items=14, batch=100, wait_budget=0.5)
    assert counts.succeeded == 14
    # The first claim knows nothing yet (INITIAL_CLAIM); after it every claim is sized by the
    # measured 0.3 s: 0.5 s / 0.3 s -> one attempt admitted at a time.
    assert admitted_with[:INITIAL_CLAIM] == [INITIAL_CLAIM] * INITIAL_CLAIM
    assert admitted_with[INITIAL_CLAIM:] == [1] * (14 - INITIAL_CLAIM)


@pytest.mark.django_db(transaction=True)
def test_sizing__fast_items_are_claimed_in_growing_batches_up_to_the_maximum(
        committed_clock, define):
    d = define("test.fast")
    fake = FakeClock()
    admitted_with = []

    @d.executor
    def fast(ctx, payload):
        admitted_with.append(_running())
        fake.advance(0.0001)
        return {}

    _enqueue(d, 10 + 20 + 25)
    with clock.controlled(fake):
        assert run_pass(max_items=100, batch=25).succeeded == 55
    firsts = [n for i, n in enumerate(admitted_with) if i in (0, 10, 30)]
    assert firsts == [10, 20, 25]  # 10 unmeasured, doubled, then capped at the maximum


@pytest.mark.django_db(transaction=True)
def test_sizing__an_admitted_attempt_that_waited_past_its_lease_is_handed_back_not_started(
        committed_clock, define):
    d = define("test.waiting")
    fake = FakeClock()
    ran = []
    lease_end = {}

    @d.executor
    def stalls(ctx, payload):
        ran.append(payload["n"])
        if payload["n"] == 0:
            # Both were admitted in one batch; read the second one's lease end, then "take" an
            # hour, far past it: the second attempt waited past its local cancel point.
            lease_end["at"] = _committed("select lease_expires_at from durable_work"
                                         " where work_id = %s", (ids[1],))[0][0]
            fake.advance(3600)
        return {}

    ids = _enqueue(d, 2)
    with clock.controlled(fake):
        counts = run_pass(max_items=2, batch=2)
    assert ran == [0]  # never started
    assert (counts.admitted, counts.succeeded, counts.refused) == (2, 1, 1)
    assert work_row(ids[1], "state", "attempt") == ("pending", 0)
    assert permits(ids[1]) == [(1, 1, "proven_no_effect", "runtime")]
    assert history(ids[1]) == ["accepted", "admitted", "not_invoked"]
    detail = rows("select detail->>'cause' from durable_work_history where event ="
                  " 'not_invoked'")[0][0]
    assert detail == "cancelled_before_invocation"
    # Due again once the lease it was admitted under has ended (the database's own account).
    assert dispatch(ids[1]) == (lease_end["at"], None)
    committed_clock.set(lease_end["at"] + timedelta(seconds=1))
    assert run_pass(max_items=1).succeeded == 1
    assert ran == [0, 1]
    assert work_row(ids[1], "state")[0] == "succeeded"


def test_sizing__the_default_maximum_is_the_runtimes_the_commands_and_the_benchs():
    from bench import work as bench_work
    from durable_schedule.management.commands.process_work import Command

    assert inspect.signature(work.process_work_pass).parameters["batch"].default == (
        sizing.DEFAULT_MAX_BATCH)
    parser = Command().create_parser("manage.py", "process_work")
    assert parser.parse_args([]).batch == sizing.DEFAULT_MAX_BATCH
    if "BENCH_WORK_BATCH" not in os.environ:
        assert bench_work.BATCH == sizing.DEFAULT_MAX_BATCH


@pytest.mark.django_db(transaction=True)
def test_sizing__with_slots_slow_items_are_claimed_n_at_a_time(committed_clock, define,
                                                               monkeypatch):
    from durable_schedule.work import concurrency

    d = define("test.slow_slots")
    fake = FakeClock()
    guard = threading.Lock()

    @d.executor
    def slow(ctx, payload):
        with guard:
            fake.advance(2.0)  # each invocation "takes" two seconds (more, seen by a neighbour)
        return {}

    asked = []

    def admit_batch(opts, seconds, n):
        asked.append(n)
        return pipeline.admit_batch(opts, seconds, n)

    monkeypatch.setattr(concurrency, "admit_batch", admit_batch)
    _enqueue(d, 18)
    try:
        with clock.controlled(fake):
            counts = run_pass(max_items=18, batch=100, concurrency=4, wait_budget=0.5)
    finally:
        concurrency.shutdown_pool()
    assert counts.succeeded == 18
    # Unmeasured: 10 (at least the 4 slots). Measured at >= 2 s: 4 x 0.5 s / 2 s is 1, so the
    # floor, one attempt per slot.
    assert asked[0] == INITIAL_CLAIM
    assert asked[1:] and all(n <= 4 for n in asked[1:])
