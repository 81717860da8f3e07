"""Property: repeated passes cover every nominal instant exactly once (docs/protocol/schedules.md
rule S1-4.3).

For random specs and random cutoff sequences (mostly forward, sometimes backward), feeding
``decide()`` pass after pass with a free slot and a huge safety window must dispose of every
nominal instant in ``(accepted_at, highest cutoff]`` exactly once, and the cursor never moves
back. Instants are counted arithmetically by an oracle written differently from the evaluator,
and enumerated one by one when the case is small enough.

The second property adds the ``queue_one`` slot: Work occupies it at random and finishes at
random, and a model of the caller (the processor's merge of ``coalesce`` into the one pending
coalesced occurrence, and its run once the slot is free) keeps the same coverage rule, with the
pending occurrence's last instant only moving forward.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.evaluation.decision import MISFIRE_POLICIES, SlotState, decide
from durable_schedule.evaluation.timeline import (
    EVALUATOR_VERSION,
    After,
    At,
    Every,
    instants_in,
    kind_of,
    next_instant_after,
    spec_from_json,
    spec_to_json,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)
DAY_US = 86_400_000_000
ENUMERATION_LIMIT = 3_000


def dt(us: int) -> datetime:
    return T0 + timedelta(microseconds=us)


def us(value: datetime) -> int:
    return (value - T0) // timedelta(microseconds=1)


offsets = st.integers(min_value=-10 * DAY_US, max_value=10 * DAY_US)
durations = st.one_of(
    st.integers(min_value=1, max_value=1_000),
    st.integers(min_value=1, max_value=DAY_US),
)
specs = st.one_of(
    st.builds(lambda o: At(dt(o)), offsets),
    st.builds(lambda d: After(timedelta(microseconds=d)), durations),
    st.builds(
        lambda i, a: Every(timedelta(microseconds=i), None if a is None else dt(a)),
        durations,
        st.none() | offsets,
    ),
)
steps = st.lists(
    st.one_of(st.integers(min_value=0, max_value=2 * DAY_US),
              st.integers(min_value=0, max_value=5_000),
              st.integers(min_value=-DAY_US, max_value=0)),
    min_size=1, max_size=25,
)


def grid(spec, accepted: int) -> tuple[int, int] | None:
    """(anchor, interval) in µs for Every; None for single-instant specs."""
    if isinstance(spec, Every):
        anchor = accepted if spec.anchor is None else us(spec.anchor)
        return anchor, spec.interval // timedelta(microseconds=1)
    return None


def single(spec, accepted: int) -> int:
    return us(spec.when) if isinstance(spec, At) else accepted + spec.delay // timedelta(
        microseconds=1)


def count_upto(spec, accepted: int, x: int) -> int:
    """Oracle: number of nominal instants <= x (all of them, even before acceptance)."""
    g = grid(spec, accepted)
    if g is None:
        return 1 if single(spec, accepted) <= x else 0
    anchor, interval = g
    return 0 if x < anchor else (x - anchor) // interval + 1


def enumerate_between(spec, accepted: int, lo: int, hi: int) -> list[int] | None:
    """Every instant in (lo, hi] by brute force, or None when that would be too many."""
    g = grid(spec, accepted)
    if g is None:
        t = single(spec, accepted)
        return [t] if lo < t <= hi else []
    anchor, interval = g
    if (hi - anchor) // interval > ENUMERATION_LIMIT:
        return None
    return [anchor + k * interval for k in range(ENUMERATION_LIMIT + 1)
            if lo < anchor + k * interval <= hi]


@settings(max_examples=200, deadline=None)
@given(spec=specs, accepted=offsets, moves=steps, misfire=st.sampled_from(MISFIRE_POLICIES))
def test_repeated_passes_cover_every_instant_exactly_once(spec, accepted, moves, misfire):
    accepted_at = dt(accepted)
    cursor, cutoff, highest = accepted_at, accepted, accepted
    ranges: list[tuple[int, int, int]] = []
    for move in moves:
        cutoff += move
        highest = max(highest, cutoff)
        d = decide(spec, accepted_at, cursor, dt(cutoff), safety_window=timedelta.max,
                   misfire=misfire, overlap="queue_one", slot=SlotState(occupied=False))
        assert d.new_cursor >= cursor, "the cursor never moves back"
        assert d.action in ("noop", "nominal", "recovery", "skipped")
        if d.action == "noop":
            assert d.new_cursor == cursor and d.count == 0
        else:
            assert d.new_cursor == d.last
            assert (d.count == 1) == (d.action == "nominal")
            ranges.append((us(d.first), us(d.last), d.count))
        # All instants up to this cutoff are now disposed of; the next one is due later.
        assert us(d.new_cursor) <= max(cutoff, us(cursor))
        assert d.next_due == next_instant_after(spec, accepted_at, d.new_cursor)
        if d.next_due is not None:
            assert us(d.next_due) > max(cutoff, us(cursor))
        cursor = d.new_cursor

    expected = count_upto(spec, accepted, highest) - count_upto(spec, accepted, accepted)
    assert sum(count for _, _, count in ranges) == expected
    previous_last = accepted
    for first, last, count in ranges:
        assert previous_last < first <= last <= highest, "ranges are disjoint and in order"
        assert count_upto(spec, accepted, last) - count_upto(spec, accepted, first - 1) == count
        previous_last = last

    listed = enumerate_between(spec, accepted, accepted, highest)
    if listed is not None:
        covered: list[int] = []
        for first, last, _ in ranges:
            covered.extend(enumerate_between(spec, accepted, first - 1, last))
        assert covered == listed


@settings(max_examples=200, deadline=None)
@given(spec=specs, accepted=offsets, lo=offsets, width=st.integers(-DAY_US, 3 * DAY_US))
def test_instants_in_matches_brute_force(spec, accepted, lo, width):
    hi = lo + width
    found = instants_in(spec, dt(accepted), dt(lo), dt(hi))
    expected_count = max(0, count_upto(spec, accepted, hi) - count_upto(spec, accepted, lo))
    if expected_count == 0:
        assert found is None
    else:
        assert found.count == expected_count
        assert lo < us(found.first) <= us(found.last) <= hi
    listed = enumerate_between(spec, accepted, lo, hi)
    if listed is not None:
        assert (found is None) == (listed == [])
        if listed:
            assert (us(found.first), us(found.last), found.count) == (
                listed[0], listed[-1], len(listed))


@settings(max_examples=200, deadline=None)
@given(spec=specs)
def test_spec_json_round_trips(spec):
    assert spec_from_json(kind_of(spec), spec_to_json(spec), EVALUATOR_VERSION) == spec


# Clock moves in half-intervals, mostly one instant per pass, sometimes none, several or a step
# backward, each with "the Work in the slot finishes before this pass" (mostly it does not, so
# the slot stays busy across passes and coalesced ranges grow).
slot_moves = st.lists(
    st.tuples(st.sampled_from([2, 2, 2, 3, 1, 0, 4, 5, 8, -2]),
              st.sampled_from([False, False, False, True])),
    min_size=1, max_size=25)
# Every weighs three times: it is the kind with ranges, coalescing and skipping.
every = st.builds(lambda i, a: Every(timedelta(microseconds=i), None if a is None else dt(a)),
                  durations, st.none() | st.none() | offsets)
busy_specs = st.one_of(specs, every, every)


@settings(max_examples=500, deadline=None)
@given(spec=busy_specs, accepted=offsets, misfire=st.sampled_from(MISFIRE_POLICIES),
       moves=slot_moves)
def test_passes_with_a_busy_slot_cover_every_instant_exactly_once(spec, accepted, misfire,
                                                                  moves):
    accepted_at = dt(accepted)
    g = grid(spec, accepted)
    half = (DAY_US if g is None else g[1]) / 2
    cursor, cutoff, highest = accepted_at, accepted, accepted
    occupied = False
    pending: tuple[int, int] | None = None  # (first, last) of the pending coalesced occurrence
    ranges: list[tuple[int, int]] = []  # every occurrence written: run, skipped or coalesced
    for halves, finishes in moves:
        cutoff += int(halves * half)
        highest = max(highest, cutoff)
        if finishes:
            occupied = False
        d = decide(spec, accepted_at, cursor, dt(cutoff), safety_window=timedelta.max,
                   misfire=misfire, overlap="queue_one",
                   slot=SlotState(occupied, None if pending is None else dt(pending[1])))
        bridged = False
        if d.action in ("nominal", "recovery"):
            assert pending is None, "a pending coalesced occurrence is never overtaken"
            ranges.append((us(d.first), us(d.last)))
            bridged = occupied = True
        elif d.action == "skipped":
            assert pending is None, "no range is recorded beside a pending coalesced one"
            ranges.append((us(d.first), us(d.last)))
        elif d.action == "coalesce":
            if pending is None:
                pending = (us(d.first), us(d.last))
            else:
                assert us(d.first) > pending[1], "the last instant only moves forward"
                pending = (pending[0], us(d.last))
        if not bridged and pending is not None and not occupied:
            ranges.append(pending)  # the caller runs the pending coalesced occurrence now
            pending, occupied = None, True
        cursor = d.new_cursor
    if pending is not None:
        ranges.append(pending)

    assert count_upto(spec, accepted, us(cursor)) == count_upto(spec, accepted, highest)
    previous_last, covered = accepted, 0
    for first, last in ranges:  # in writing order, which is instant order
        assert previous_last < first <= last <= us(cursor), (ranges, us(cursor))
        covered += count_upto(spec, accepted, last) - count_upto(spec, accepted, first - 1)
        previous_last = last
    assert covered == count_upto(spec, accepted, highest) - count_upto(spec, accepted, accepted)
