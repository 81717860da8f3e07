"""The plain ``Every`` decision path (evaluation/every_fast.py) against ``decide()``: for every
input it accepts, the very same Decision (every field, the evidence's keys in their order, the
instants' time zones); every input outside its preconditions goes to the general path
(processor/evaluate.py ``evaluate_pass``)."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from durable_schedule.evaluation.bounds import Bounds
from durable_schedule.evaluation.cron.spec import Cron
from durable_schedule.evaluation.decision import Decision, SlotState, decide
from durable_schedule.evaluation.every_fast import decide_every
from durable_schedule.evaluation.timeline import After, At, Every
from durable_schedule.processor.evaluate import evaluate_generation, evaluate_pass

T0 = datetime(2030, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
_UTC_DATES = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                          timezones=st.just(UTC))
_NEAR = st.integers(min_value=-10**13, max_value=10**13).map(
    lambda us: T0 + timedelta(microseconds=us))
INSTANTS = st.one_of(_NEAR, _UTC_DATES)
INTERVALS = st.one_of(
    st.sampled_from([timedelta(microseconds=1), timedelta(seconds=1), timedelta(minutes=1), H,
                     timedelta(days=1), timedelta(days=365 * 3000)]),
    st.integers(min_value=1, max_value=10**14).map(lambda us: timedelta(microseconds=us)))
WINDOWS = st.one_of(st.sampled_from([timedelta(microseconds=1), H, timedelta(days=1)]),
                    st.integers(min_value=1, max_value=10**13).map(
                        lambda us: timedelta(microseconds=us)))


def _same(fast: Decision, general: Decision) -> None:
    assert fast == general
    for f in fields(Decision):
        a, b = getattr(fast, f.name), getattr(general, f.name)
        if isinstance(a, datetime):
            assert (a.tzinfo, a.fold, a.isoformat()) == (b.tzinfo, b.fold, b.isoformat()), f.name
    if general.evidence is not None:
        assert list(fast.evidence.items()) == list(general.evidence.items())


def _general(spec, accepted, cursor, cutoff, window, misfire, overlap, occupied):
    return decide(spec, accepted, cursor, cutoff, safety_window=window, misfire=misfire,
                  overlap=overlap, slot=SlotState(occupied))


@settings(max_examples=3000, deadline=None)
@given(interval=INTERVALS, anchor=st.one_of(st.none(), INSTANTS), accepted=INSTANTS,
       cursor_after=st.one_of(st.integers(min_value=0, max_value=10**12),
                              st.integers(min_value=0, max_value=10**17)),
       cutoff=st.one_of(INSTANTS, st.integers(min_value=-10**10, max_value=10**13)),
       window=WINDOWS, misfire=st.sampled_from(["run_once", "skip"]),
       overlap=st.sampled_from(["queue_one", "skip", "allow_all"]), occupied=st.booleans())
@example(interval=H, anchor=None, accepted=T0, cursor_after=0, cutoff=3_601_000_000, window=H,
         misfire="run_once", overlap="queue_one", occupied=False)  # the bench's shape
def test_every_fast__equals_decide_for_every_input_it_accepts(
        interval, anchor, accepted, cursor_after, cutoff, window, misfire, overlap, occupied):
    try:
        cursor = accepted + timedelta(microseconds=cursor_after)
    except OverflowError:
        assume(False)
    if isinstance(cutoff, int):  # relative to the cursor: the windows that hold instants
        try:
            cutoff = cursor + timedelta(microseconds=cutoff)
        except OverflowError:
            assume(False)
    spec = Every(interval, anchor)
    fast = decide_every(spec, accepted, cursor, cutoff, safety_window=window, misfire=misfire,
                        overlap=overlap, occupied=occupied)
    assert fast is not None  # every precondition holds
    _same(fast, _general(spec, accepted, cursor, cutoff, window, misfire, overlap, occupied))


def test_every_fast__covers_each_action():
    """The property's shapes, one each, so none is only reached by chance."""
    def fast(cutoff, **kw):
        args = {"safety_window": timedelta(days=1), "misfire": "run_once",
                "overlap": "queue_one", "occupied": False} | kw
        got = decide_every(Every(H), T0, T0, cutoff, **args)
        _same(got, decide(Every(H), T0, T0, cutoff, safety_window=args["safety_window"],
                          misfire=args["misfire"], overlap=args["overlap"],
                          slot=SlotState(args["occupied"])))
        return got.action, got.skip_cause

    assert fast(T0 + H / 2) == ("noop", None)
    assert fast(T0 + H) == ("nominal", None)
    assert fast(T0 + 3 * H) == ("recovery", None)
    assert fast(T0 + 3 * H, misfire="skip") == ("skipped", "misfire")
    assert fast(T0 + H, occupied=True) == ("coalesce", None)
    assert fast(T0 + H, occupied=True, overlap="skip") == ("skipped", "overlap")
    assert fast(T0 + H, occupied=True, overlap="allow_all") == ("nominal", None)
    assert fast(T0 + 3 * H, occupied=True, misfire="skip") == ("skipped", "misfire")
    assert fast(T0 + 30 * H, safety_window=H) == ("suspend", None)
    assert fast(T0 + 2 * H, safety_window=H) == ("recovery", None)  # exactly the window: in time


def test_every_fast__next_due_beyond_datetime_max_is_none():
    spec = Every(timedelta(days=365 * 8000))  # the first instant is past year 9999
    got = decide_every(spec, T0, T0, T0 + H, safety_window=H, misfire="run_once",
                       overlap="queue_one", occupied=False)
    _same(got, _general(spec, T0, T0, T0 + H, H, "run_once", "queue_one", False))
    assert got.next_due is None


_PLAIN = {"spec": Every(H), "accepted_at": T0, "cursor": T0, "cutoff": T0 + H,
          "safety_window": H, "misfire": "run_once", "overlap": "queue_one", "occupied": False}
_ELSEWHERE = timezone(timedelta(hours=2))


@pytest.mark.parametrize("change", [
    {"spec": At(T0 + H)}, {"spec": After(H)}, {"spec": Cron("0 * * * *", "UTC")},
    {"spec": type("EverySub", (Every,), {})(H)},
    {"accepted_at": T0.astimezone(_ELSEWHERE)}, {"cursor": (T0 + H).astimezone(_ELSEWHERE)},
    {"cutoff": (T0 + H).replace(tzinfo=None)}, {"cutoff": "2030-01-01"},
    {"cursor": T0 - H},  # before acceptance: decide() raises, unevaluable
    {"misfire": "later"}, {"overlap": "buffer_all"}, {"overlap": "nope"},
    {"safety_window": timedelta(0)}, {"safety_window": 3600},
    {"occupied": 1}, {"pending_last": T0}, {"late_from": T0},
])
def test_every_fast__declines_outside_its_preconditions(change):
    assert decide_every(**(_PLAIN | change)) is None


# ------------------------------------------------ processor/evaluate.py: which path is taken
def _definition(**kw) -> SimpleNamespace:
    base = {"accepted_at_utc": T0, "cursor_utc": T0, "safety_window": H, "misfire": "run_once",
            "overlap": "queue_one", "buffer_limit": None, "start_at": None, "end_at": None,
            "max_runs": None, "resumed_at": None}
    return SimpleNamespace(**(base | kw))


class _Lifecycle:
    def __init__(self, d) -> None:
        self.d, self.calls = d, 0

    def __call__(self):
        self.calls += 1
        return {"bounds": Bounds(start_at=self.d.start_at, end_at=self.d.end_at,
                                 max_runs=self.d.max_runs), "runs": 1, "late_from":
                self.d.resumed_at}


def test_evaluate_pass__plain_every_takes_the_fast_path():
    d = _definition(start_at=T0 - H)
    spy = _Lifecycle(d)
    got = evaluate_pass(d, T0 + H, None, None, spec=Every(H), lifecycle=spy)
    assert spy.calls == 0
    _same(got, evaluate_generation(d, T0 + H, None, None, spec=Every(H), lifecycle=spy()))


@pytest.mark.parametrize("change, pending, buffered", [
    ({"end_at": T0 + 2 * H}, None, 0),
    ({"max_runs": 2}, None, 0),
    ({"start_at": (T0 - H).astimezone(_ELSEWHERE)}, None, 0),
    ({"overlap": "buffer_all", "buffer_limit": 5}, None, 0),
    ({"overlap": "buffer_all", "buffer_limit": 5}, None, 2),
    ({"resumed_at": T0 + H / 2}, None, 0),
    ({}, T0 + H / 2, 0),
    ({"spec": Cron("0 * * * *", "UTC")}, None, 0),
])
def test_evaluate_pass__anything_else_goes_to_the_general_path(change, pending, buffered):
    spec = change.pop("spec", Every(H))
    d = _definition(**change)
    spy = _Lifecycle(d)
    got = evaluate_pass(d, T0 + 3 * H, None, pending, spec=spec, lifecycle=spy,
                        buffered=buffered)
    assert spy.calls == 1
    _same(got, evaluate_generation(d, T0 + 3 * H, None, pending, spec=spec, lifecycle=spy(),
                                   buffered=buffered))


_MIN, _MAX = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
_US = timedelta(microseconds=1)


@pytest.mark.parametrize("interval", [_US, 7 * _US, H, timedelta.max, _MAX - _MIN])
@pytest.mark.parametrize("anchor", [None, _MIN, _MAX, _MIN + H])
@pytest.mark.parametrize("accepted, cursor, cutoff", [
    (_MIN, _MIN, _MIN), (_MIN, _MIN, _MIN + _US), (_MIN, _MIN, _MAX),
    (_MAX - H, _MAX - H, _MAX), (_MAX, _MAX, _MAX), (_MAX - _US, _MAX - _US, _MAX),
    (_MIN + H, _MIN + H, _MIN),  # cutoff behind the cursor
])
@pytest.mark.parametrize("window", [_US, timedelta.max])
def test_every_fast__equals_decide_at_the_ends_of_the_representable_range(
        interval, anchor, accepted, cursor, cutoff, window):
    # The property's strategies stop a day short of datetime.min and datetime.max; the grid
    # arithmetic and the next-due conversion (None beyond the range) must agree there too.
    spec = Every(interval, anchor)
    for misfire, overlap, occupied in [("run_once", "queue_one", True), ("skip", "skip", True),
                                       ("run_once", "allow_all", False)]:
        fast = decide_every(spec, accepted, cursor, cutoff, safety_window=window,
                            misfire=misfire, overlap=overlap, occupied=occupied)
        assert fast is not None
        _same(fast, _general(spec, accepted, cursor, cutoff, window, misfire, overlap,
                             occupied))
