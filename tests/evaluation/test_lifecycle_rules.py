"""The lifecycle's pure rules (evaluation/bounds.py, evaluation/jitter.py, evaluation/overlap.py
and decide()'s bounds / late_from arguments): no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule.errors import InvalidBounds, InvalidJitter
from durable_schedule.evaluation import bounds as bounding
from durable_schedule.evaluation import jitter as jittering
from durable_schedule.evaluation import overlap
from durable_schedule.evaluation.bounds import Bounds
from durable_schedule.evaluation.decision import SlotState, decide
from durable_schedule.evaluation.timeline import At, Every

T0 = datetime(2030, 1, 1, tzinfo=UTC)
M = timedelta(minutes=1)
US = timedelta(microseconds=1)
FREE, BUSY = SlotState(False), SlotState(True)


def run(cursor, cutoff, *, slot=FREE, overlap_policy="queue_one", misfire="run_once",
        bounds=bounding.NONE, runs=0, late_from=None, spec=None):
    return decide(spec or Every(10 * M), T0, cursor, cutoff, safety_window=60 * M,
                  misfire=misfire, overlap=overlap_policy, slot=slot, bounds=bounds,
                  runs=runs, late_from=late_from)


# ---------------------------------------------------------------- bounds
def test_bounds__validation():
    with pytest.raises(InvalidBounds):
        Bounds(start_at=T0 + M, end_at=T0)
    with pytest.raises(InvalidBounds):
        Bounds(max_runs=0)
    with pytest.raises(InvalidBounds):
        Bounds(max_runs=True)
    with pytest.raises(InvalidBounds) as naive:  # docs: naive bounds are InvalidBounds
        Bounds(end_at=datetime(2030, 1, 1))
    assert naive.value.code == "DS148" and naive.value.context["field"] == "end_at"
    assert Bounds().unbounded and not Bounds(max_runs=1).unbounded


def test_bounds__start_at_moves_the_initial_cursor_to_just_before_it():
    assert bounding.initial_cursor(T0, T0, Bounds(start_at=T0 + 35 * M)) == T0 + 35 * M - US
    assert bounding.initial_cursor(T0, T0, Bounds(start_at=T0 - M)) == T0
    assert bounding.initial_cursor(T0, T0 + M, Bounds()) == T0 + M


def test_decide__end_at_clips_the_window_and_ends_the_generation():
    d = run(T0, T0 + 50 * M, bounds=Bounds(end_at=T0 + 25 * M))
    assert (d.action, d.first, d.last, d.count, d.next_due) == (
        "recovery", T0 + 10 * M, T0 + 20 * M, 2, None)


def test_decide__end_at_exactly_on_an_instant_includes_it():
    d = run(T0, T0 + 20 * M, bounds=Bounds(end_at=T0 + 20 * M))
    assert (d.last, d.next_due) == (T0 + 20 * M, None)


def test_decide__max_runs_the_last_run_has_no_next_instant():
    d = run(T0, T0 + 10 * M, bounds=Bounds(max_runs=3), runs=2)
    assert (d.action, d.next_due) == ("nominal", None)
    d = run(T0, T0 + 10 * M, bounds=Bounds(max_runs=3), runs=1)
    assert d.next_due == T0 + 20 * M


def test_decide__max_runs_used_up_is_a_noop_without_next_instant():
    d = run(T0, T0 + 30 * M, bounds=Bounds(max_runs=2), runs=2)
    assert (d.action, d.count, d.next_due, d.new_cursor) == ("noop", 0, None, T0)


def test_decide__a_new_pending_coalesced_occurrence_uses_a_run_and_joining_one_does_not():
    new = run(T0, T0 + 10 * M, slot=BUSY, bounds=Bounds(max_runs=2), runs=1)
    assert (new.action, new.next_due) == ("coalesce", None)
    joined = run(T0 + 10 * M, T0 + 20 * M, slot=SlotState(True, T0 + 10 * M),
                 bounds=Bounds(max_runs=3), runs=2)
    assert (joined.action, joined.next_due) == ("coalesce", T0 + 30 * M)


# ---------------------------------------------------------------- pause: lateness from resume
def test_decide__instants_that_fell_while_paused_are_late_from_the_resume_only():
    # The earliest instant is 4 h 50 min before the cutoff, far past the 1 h window, but the
    # schedule was resumed 1 min before the cutoff: it is 1 min late, not a clock jump.
    d = run(T0, T0 + 5 * 60 * M, late_from=T0 + 5 * 60 * M - M)
    assert (d.action, d.count) == ("recovery", 30)
    assert d.evidence["lateness_us"] == M // US
    jumped = run(T0, T0 + 5 * 60 * M, late_from=T0 + 3 * 60 * M)
    assert (jumped.action, jumped.suspend_reason) == ("suspend", "clock_jump")


def test_decide__late_from_does_not_excuse_instants_after_it():
    d = run(T0 + 60 * M, T0 + 200 * M, late_from=T0)
    assert d.action == "suspend"


# ---------------------------------------------------------------- overlap, per instant
@pytest.mark.parametrize(("policy", "slot", "expected", "cause"), [
    ("queue_one", FREE, "nominal", None),
    ("queue_one", BUSY, "coalesce", None),
    ("queue_one", SlotState(False, T0), "coalesce", None),  # keeps order behind the pending
    ("skip", FREE, "nominal", None),
    ("skip", BUSY, "skipped", "overlap"),
    ("allow_all", FREE, "nominal", None),
    ("allow_all", BUSY, "nominal", None),
])
def test_decide__overlap_policy_per_instant(policy, slot, expected, cause):
    d = run(T0, T0 + 10 * M, slot=slot, overlap_policy=policy)
    assert (d.action, d.skip_cause) == (expected, cause)


def test_overlap__misfire_skip_wins_and_is_counted_as_misfire():
    d = run(T0, T0 + 30 * M, slot=BUSY, misfire="skip", overlap_policy="allow_all")
    assert (d.action, d.skip_cause, d.count) == ("skipped", "misfire", 3)


def test_overlap__trigger_allowed():
    assert overlap.trigger_allowed("queue_one", occupied=False)
    assert not overlap.trigger_allowed("queue_one", occupied=True)
    assert not overlap.trigger_allowed("skip", occupied=True)
    assert overlap.trigger_allowed("allow_all", occupied=True)
    assert overlap.trigger_allowed("buffer_all", occupied=False, buffered=0)
    assert not overlap.trigger_allowed("buffer_all", occupied=False, buffered=1)
    assert not overlap.trigger_allowed("buffer_all", occupied=True)


def buffering(cursor, cutoff, *, slot, buffered, limit=3, misfire="run_once", runs=0,
              bounds=bounding.NONE):
    return decide(Every(10 * M), T0, cursor, cutoff, safety_window=60 * M, misfire=misfire,
                  overlap="buffer_all", slot=slot, buffered=buffered, buffer_limit=limit,
                  runs=runs, bounds=bounds)


@pytest.mark.parametrize(("slot", "waiting", "expected", "cause", "kind"), [
    (FREE, 0, "nominal", None, "nominal"),  # a free slot and an empty buffer: runs at once
    (BUSY, 0, "buffer", None, "nominal"),  # the slot is held: waits
    (FREE, 1, "buffer", None, "nominal"),  # older instants wait: behind them, in order
    (BUSY, 2, "buffer", None, "nominal"),
    (BUSY, 3, "skipped", "buffer_overflow", "recovery"),  # the buffer is full
    # Full, but the oldest runs in this pass (the slot is free): its place takes the instant.
    (FREE, 3, "buffer", None, "nominal"),
])
def test_decide__buffer_all_per_instant(slot, waiting, expected, cause, kind):
    d = buffering(T0, T0 + 10 * M, slot=slot, buffered=waiting)
    assert (d.action, d.skip_cause, d.occurrence_kind) == (expected, cause, kind)
    assert d.new_cursor == T0 + 10 * M


def test_decide__buffer_all_buffers_a_missed_range_as_one_recovery_occurrence():
    d = buffering(T0, T0 + 30 * M, slot=BUSY, buffered=0)
    assert (d.action, d.count, d.occurrence_kind) == ("buffer", 3, "recovery")
    skipped = buffering(T0, T0 + 30 * M, slot=BUSY, buffered=0, misfire="skip")
    assert (skipped.action, skipped.skip_cause) == ("skipped", "misfire")


def test_decide__a_buffered_instant_uses_one_of_max_runs():
    d = buffering(T0, T0 + 10 * M, slot=BUSY, buffered=0, runs=1, bounds=Bounds(max_runs=2))
    assert d.action == "buffer" and d.next_due is None  # the buffered one is the last run


@pytest.mark.parametrize(("policy", "limit"), [("buffer_all", None), ("buffer_all", 0),
                                               ("buffer_all", 1001), ("queue_one", 5)])
def test_decide__a_stored_buffer_limit_that_does_not_fit_is_refused_with_ds154(policy, limit):
    from durable_schedule.errors import InvalidBufferLimit

    with pytest.raises(InvalidBufferLimit):
        decide(Every(10 * M), T0, T0, T0 + 10 * M, safety_window=60 * M, misfire="run_once",
               overlap=policy, slot=FREE, buffer_limit=limit)


# ---------------------------------------------------------------- jitter
def test_jitter__validation():
    assert jittering.validate(None, Every(10 * M)) is None
    assert jittering.validate(9 * M, Every(10 * M)) == 9 * M
    assert jittering.validate(timedelta(days=3), At(T0)) == timedelta(days=3)
    for bad in (10 * M, timedelta(0), -M, 5):
        with pytest.raises(InvalidJitter):
            jittering.validate(bad, Every(10 * M))


def test_jitter__cron_is_bounded_by_the_shortest_gap_between_its_instants():
    from durable_schedule.evaluation.cron.spec import Cron
    from durable_schedule.evaluation.cron.spec import with_seed as cron_seed

    assert jittering.validate(4 * M, Cron("*/5 * * * *")) == 4 * M
    with pytest.raises(InvalidJitter) as refused:
        jittering.validate(5 * M, Cron("*/5 * * * *"))
    assert refused.value.code == "DS149" and refused.value.context["gap"] == "0:05:00"
    # A daily job in a DST zone: spring forward shifts 02:30 to 03:00, a 23.5 h gap.
    berlin = Cron("30 2 * * *", "Europe/Berlin")
    assert jittering.shortest_cron_gap(berlin, start=T0) == timedelta(hours=23, minutes=30)
    assert jittering.validate(23 * 60 * M, berlin) == 23 * 60 * M
    with pytest.raises(InvalidJitter):
        jittering.validate(timedelta(hours=23, minutes=30), berlin)
    # The shift can make one gap far shorter than the expression's spacing: 01:45 CET is
    # 00:45 UTC and 02:45 (missing) runs at 03:00 CEST = 01:00 UTC, 15 min later.
    hourly = Cron("45 * * * *", "Europe/Berlin")
    assert jittering.shortest_cron_gap(hourly, start=T0) == 15 * M
    with pytest.raises(InvalidJitter):
        jittering.validate(20 * M, hourly)
    # An H expression is read with the seed of the schedule it is given to: where a DST shift
    # meets it (02:H is missing on the spring night), its gap differs from one schedule to the
    # next.
    assert jittering.shortest_cron_gap(Cron("H/15 * * * *"), start=T0) == 15 * M
    gaps = {}
    spring = Cron("H 1,2 * * *", "Europe/Berlin")
    for i in range(40):
        identity = ("scope", f"s{i}")
        gap = jittering.shortest_cron_gap(cron_seed(spring, *identity), start=T0)
        gaps[identity] = gap
        assert jittering.validate(gap - US, spring, identity) == gap - US
        with pytest.raises(InvalidJitter):
            jittering.validate(gap, spring, identity)
    assert len(set(gaps.values())) > 1
    # Fewer than two instants in the year ahead: bounded by the year.
    leap = Cron("0 0 29 2 *")
    assert jittering.validate(timedelta(days=30), leap) == timedelta(days=30)
    with pytest.raises(InvalidJitter):
        jittering.validate(timedelta(days=366), leap)


def test_jitter__deterministic_bounded_and_spread():
    bound = 3 * M
    offsets = [jittering.offset_us(bound, "scope", f"s{i}", 1, "nominal", T0)
               for i in range(200)]
    assert offsets == [jittering.offset_us(bound, "scope", f"s{i}", 1, "nominal", T0)
                       for i in range(200)]
    assert all(0 <= o < bound // US for o in offsets)
    assert len(set(offsets)) > 190  # spread, not one value
    assert jittering.offset_us(None, "scope", "s", 1, "nominal", T0) == 0
    assert jittering.offset_us(US, "scope", "s", 1, "nominal", T0) == 0  # bound 1 µs: only 0
    # the identity, not the time of asking, decides: another instant, another offset
    assert jittering.offset_us(bound, "scope", "s", 1, "nominal", T0) != jittering.offset_us(
        bound, "scope", "s", 1, "nominal", T0 + 10 * M)
    assert jittering.due_at(T0, 5) == T0 + 5 * US


def test_jitter__cron_gap_after_the_years_last_instant_counts():
    """A yearly expression has one instant in the year ahead: the gap from it to the next one
    (365 days from 2031 to 2032) bounds the jitter, not the year (366 days)."""
    from durable_schedule.evaluation.cron.spec import Cron

    yearly = Cron("0 0 1 1 *")
    start = datetime(2030, 1, 1, 12, tzinfo=UTC)
    assert jittering.shortest_cron_gap(yearly, start=start) == timedelta(days=365)
    assert jittering.validate(timedelta(days=365) - US, yearly, start=start)
    with pytest.raises(InvalidJitter) as refused:
        jittering.validate(timedelta(days=365), yearly, start=start)
    assert refused.value.context["gap"] == "365 days, 0:00:00"
    # No instant in the year ahead (Friday the 13th: none from 14 Aug 2027 to 13 Oct 2028):
    # the first two instants after it bound the jitter (13 Oct 2028 to 13 Apr 2029).
    friday13 = Cron("0 0 13 * FRI")
    start = datetime(2027, 8, 14, tzinfo=UTC)
    assert jittering.shortest_cron_gap(friday13, start=start) == timedelta(days=182)
    with pytest.raises(InvalidJitter):
        jittering.validate(timedelta(days=200), friday13, start=start)


def test_jitter__cron_gap_at_a_dst_change_far_ahead_counts():
    """Every DST change of the year ahead is read, however many instants lie before it:
    ``10,40 * * * *`` has 30-minute gaps, but on the spring night 01:40 CET (00:40Z), 02:10 and
    02:40 (missing, shifted to 03:00 CEST = 01:00Z) and 03:10 CEST (01:10Z) leave 20 and 10
    minutes. Read from May 2030, that night (30 March 2031) lies beyond the first 10,000
    instants."""
    from durable_schedule.evaluation.cron.spec import Cron

    spec = Cron("10,40 * * * *", "Europe/Berlin")
    start = datetime(2030, 5, 1, tzinfo=UTC)
    assert jittering.shortest_cron_gap(spec, start=start) == 10 * M
    with pytest.raises(InvalidJitter) as refused:
        jittering.validate(15 * M, spec, start=start)
    assert refused.value.context["gap"] == "0:10:00"
    # Lord Howe's 30-minute shift (first Sunday of October): 01:45 and 02:15 (missing,
    # shifted to 02:30) are 15 minutes apart, 02:30 and 02:45 another 15.
    howe = Cron("15,45 * * * *", "Australia/Lord_Howe")
    assert jittering.shortest_cron_gap(howe, start=datetime(2030, 10, 8, tzinfo=UTC)) == 15 * M
