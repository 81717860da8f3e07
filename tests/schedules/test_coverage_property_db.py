"""Property with the real database (docs/protocol/schedules.md rule S1-4.4): for random specs,
policies and random increasing cutoff sequences (with Work finishing at random and passes forced at
random), the occurrence ranges the processor writes cover every nominal instant in (accepted_at,
cursor] exactly once, every materialized occurrence has exactly one Work, and the cursor never moves
back. Instants are counted by an oracle written differently from the evaluator."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_schedule import schedules
from tests.schedules.conftest import (
    T0,
    create,
    definition,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

US = timedelta(microseconds=1)
DAY_US = 86_400_000_000
EXAMPLES = itertools.count()


def dt(us: int):
    return T0 + us * US


everies = st.builds(lambda i, a: schedules.Every(i * US, None if a is None else dt(a)),
                   st.one_of(st.integers(1, 5_000), st.integers(60_000_000, DAY_US // 4)),
                   st.none() | st.integers(-DAY_US, DAY_US))
# Every weighs three times: it is the kind with ranges, coalescing and recovery.
specs = st.one_of(
    st.builds(lambda o: schedules.At(dt(o)), st.integers(1, 3 * DAY_US)),
    st.builds(lambda d: schedules.After(d * US), st.integers(1, DAY_US)),
    everies, everies, everies,
)
steps = st.lists(
    st.tuples(
        st.one_of(st.integers(0, DAY_US // 2), st.integers(0, 10_000)),  # clock advance (us)
        st.booleans(),  # the running Work finishes first
        st.booleans(),  # force the dispatch row due (a pass at an arbitrary cutoff)
    ),
    min_size=2, max_size=10,
)


def grid(spec):
    """(anchor_us, interval_us) of an Every; a one-instant spec is a grid of one point."""
    if isinstance(spec, schedules.Every):
        anchor = 0 if spec.anchor is None else (spec.anchor - T0) // US
        return anchor, spec.interval // US, False
    at = (spec.when - T0) // US if isinstance(spec, schedules.At) else spec.delay // US
    return at, 1, True


def upto(spec, t: int) -> int:
    """How many nominal instants are <= t (microseconds after T0)."""
    anchor, interval, single = grid(spec)
    if t < anchor:
        return 0
    return 1 if single else (t - anchor) // interval + 1


def on_grid(spec, t: int) -> bool:
    anchor, interval, single = grid(spec)
    return t == anchor if single else t >= anchor and (t - anchor) % interval == 0


@pytest.mark.django_db
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=specs, misfire=st.sampled_from(["run_once", "skip"]), plan=steps)
def test_property__every_nominal_instant_is_covered_exactly_once(clock, target, spec, misfire,
                                                                 plan):
    # Each example gets its own scope and deletes its schedule at the end (the processor's
    # durable transactions cannot nest in a savepoint that would roll the example back).
    scope = f"prop-{next(EXAMPLES)}"
    clock.set(T0)
    create("p", spec, target, scope=scope, misfire=misfire, safety_window=timedelta(days=3650))
    try:
        now, cursor = 0, T0
        for advance, finish, force in plan:
            now += advance
            clock.set(dt(now))
            if finish:
                for work_id, state, *_ in works(scope):
                    if state == "pending":
                        set_work_state(work_id, "succeeded", scope=scope)
            if force:
                rows("update durable_schedule_dispatch d set due_at = '-infinity'"
                     " from durable_schedule_scope s where s.routing_id = d.scope_routing_id"
                     " and s.scope_id = %s returning 1", (scope,))
            run_pass(clock, max_schedules=1)
            d = definition("p", scope)
            assert d["cursor_utc"] >= cursor, "the cursor moved back"
            assert d["state"] in ("active", "completed")
            cursor = d["cursor_utc"]
        check_coverage(spec, cursor, scope)
    finally:
        schedules.delete(scope, "p")


def check_coverage(spec, cursor, scope) -> None:
    end = (cursor - T0) // US
    ranges = sorted(((first - T0) // US, (last - T0) // US, kind, state, work_id)
                    for _g, kind, first, last, state, work_id in occurrences("p", scope))
    previous = 0  # acceptance instant: nothing at or before it is ever covered
    covered = 0
    for first, last, kind, state, work_id in ranges:
        assert previous < first <= last <= end, (ranges, end)
        assert on_grid(spec, first) and on_grid(spec, last), ranges
        assert (kind == "nominal") <= (first == last)
        assert (state == "materialized") == (work_id is not None), ranges
        covered += upto(spec, last) - upto(spec, first - 1)
        previous = last
    assert covered == upto(spec, end) - upto(spec, 0), (ranges, end)
    linked = [r[4] for r in ranges if r[4] is not None]
    assert sorted(w[0] for w in works(scope)) == sorted(linked)
