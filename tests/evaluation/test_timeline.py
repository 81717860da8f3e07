"""Schedule specs and nominal instants (docs/protocol/schedules.md "Authoritative time";
docs/protocol/schedules.md rules S1-S2).

Pure unit tests: no database, no clock.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from durable_schedule.errors import (
    InvalidArgument,
    InvalidScheduleSpec,
    NaiveDatetime,
    NonPositiveDuration,
    UnevaluableGeneration,
)
from durable_schedule.evaluation.timeline import (
    EVALUATOR_VERSION,
    After,
    At,
    Every,
    InstantRange,
    instants_in,
    kind_of,
    next_instant_after,
    spec_from_json,
    spec_to_json,
    validate_spec,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)
PLUS_2 = timezone(timedelta(hours=2))
H = timedelta(hours=1)
US = timedelta(microseconds=1)


def t(**delta: float) -> datetime:
    return T0 + timedelta(**delta)


# ---------------------------------------------------------------- construction / validation
def test_at__naive_datetime_is_refused_with_ds103():
    with pytest.raises(NaiveDatetime) as info:
        At(datetime(2030, 1, 1))
    assert info.value.code == "DS103"


def test_every__naive_anchor_is_refused_with_ds103():
    with pytest.raises(NaiveDatetime):
        Every(H, anchor=datetime(2030, 1, 1))


def test_at__aware_non_utc_is_normalized_to_utc_same_instant():
    spec = At(datetime(2030, 1, 1, 2, 0, tzinfo=PLUS_2))
    assert spec.when == T0
    assert spec.when.utcoffset() == timedelta(0)
    assert spec.when.tzinfo is UTC


def test_every__anchor_is_normalized_to_utc():
    assert Every(H, anchor=datetime(2030, 1, 1, 2, tzinfo=PLUS_2)).anchor.tzinfo is UTC


@pytest.mark.parametrize("bad", [timedelta(0), -US, -H])
def test_after__non_positive_delay_is_refused_with_ds102(bad):
    with pytest.raises(NonPositiveDuration) as info:
        After(bad)
    assert info.value.code == "DS102"


@pytest.mark.parametrize("bad", [timedelta(0), -US, -H])
def test_every__non_positive_interval_is_refused_with_ds102(bad):
    with pytest.raises(NonPositiveDuration):
        Every(bad)


@pytest.mark.parametrize(
    "make",
    [lambda: At("2030-01-01T00:00:00+00:00"), lambda: After(3600), lambda: Every(1.5),
     lambda: Every(H, anchor="2030-01-01"), lambda: At(T0.date())],
)
def test_spec__wrong_field_type_is_invalid_spec_ds101(make):
    with pytest.raises(InvalidScheduleSpec) as info:
        make()
    assert info.value.code == "DS101"


def test_validate_spec__rejects_a_non_spec():
    with pytest.raises(InvalidScheduleSpec):
        validate_spec({"every": 3600})


def test_validate_spec__catches_a_field_forced_past_the_frozen_dataclass():
    spec = After(H)
    object.__setattr__(spec, "delay", timedelta(0))
    with pytest.raises(NonPositiveDuration):
        validate_spec(spec)


def test_validate_spec__returns_equal_utc_spec():
    spec = Every(H, anchor=t(hours=3))
    assert validate_spec(spec) == spec


@pytest.mark.parametrize(
    ("spec", "kind"), [(At(T0), "at"), (After(H), "after"), (Every(H), "every")]
)
def test_kind_of__names_each_kind(spec, kind):
    assert kind_of(spec) == kind


def test_kind_of__rejects_a_non_spec():
    with pytest.raises(InvalidScheduleSpec):
        kind_of(H)


# ---------------------------------------------------------------- persisted form
@pytest.mark.parametrize(
    ("spec", "data"),
    [
        (At(t(microseconds=7)), {"at": "2030-01-01T00:00:00.000007+00:00"}),
        (After(timedelta(seconds=90)), {"delay_us": 90_000_000}),
        (Every(H), {"interval_us": 3_600_000_000, "anchor": None}),
        (Every(US, anchor=datetime(2030, 1, 1, 2, tzinfo=PLUS_2)),
         {"interval_us": 1, "anchor": "2030-01-01T00:00:00.000000+00:00"}),
    ],
)
def test_spec_json__exact_form_and_round_trip(spec, data):
    assert spec_to_json(spec) == data
    assert json.loads(json.dumps(data)) == data
    assert spec_from_json(kind_of(spec), data, EVALUATOR_VERSION) == spec


GOOD_AT = {"at": "2030-01-01T00:00:00.000000+00:00"}
TAMPERED = [
    ("at", GOOD_AT, "ds-eval-v0", "unknown_evaluator_version"),
    ("at", GOOD_AT, None, "unknown_evaluator_version"),
    ("rrule", GOOD_AT, EVALUATOR_VERSION, "unknown_kind"),
    # cron is a kind now, with its own evaluator version: ds-eval-v1 is foreign to it.
    ("cron", GOOD_AT, EVALUATOR_VERSION, "unknown_evaluator_version"),
    ("AT", GOOD_AT, EVALUATOR_VERSION, "unknown_kind"),
    ("at", ["2030-01-01T00:00:00.000000+00:00"], EVALUATOR_VERSION, "not_an_object"),
    ("at", {}, EVALUATOR_VERSION, "wrong_keys"),
    ("at", {**GOOD_AT, "tz": "UTC"}, EVALUATOR_VERSION, "wrong_keys"),
    ("every", {"interval_us": 5}, EVALUATOR_VERSION, "wrong_keys"),
    ("after", {"interval_us": 5}, EVALUATOR_VERSION, "wrong_keys"),
    ("after", {"delay_us": "5"}, EVALUATOR_VERSION, "bad_duration"),
    ("after", {"delay_us": True}, EVALUATOR_VERSION, "bad_duration"),
    ("after", {"delay_us": 1.0}, EVALUATOR_VERSION, "bad_duration"),
    ("after", {"delay_us": 10**30}, EVALUATOR_VERSION, "bad_duration"),
    ("after", {"delay_us": 0}, EVALUATOR_VERSION, "non_positive_duration"),
    ("every", {"interval_us": -1, "anchor": None}, EVALUATOR_VERSION, "non_positive_duration"),
    ("at", {"at": None}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": 1893456000}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": "2030-01-01T00:00:00+00:00"}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": "2030-01-01T02:00:00.000000+02:00"}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": "2030-01-01T00:00:00.000000"}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": "2030-01-01T00:00:00.000000Z"}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": "2030-13-01T00:00:00.000000+00:00"}, EVALUATOR_VERSION, "bad_timestamp"),
    ("at", {"at": "\uff12030-01-01T00:00:00.000000+00:00"}, EVALUATOR_VERSION,
     "bad_timestamp"),
    ("every", {"interval_us": 5, "anchor": 0}, EVALUATOR_VERSION, "bad_timestamp"),
    ("every", {"interval_us": 5, "anchor": "yesterday"}, EVALUATOR_VERSION, "bad_timestamp"),
]


@pytest.mark.parametrize(("kind", "data", "version", "reason"), TAMPERED)
def test_spec_from_json__tampered_data_is_unevaluable_ds114(kind, data, version, reason):
    with pytest.raises(UnevaluableGeneration) as info:
        spec_from_json(kind, data, version)
    assert info.value.code == "DS114"
    assert info.value.context["reason"] == reason


# ---------------------------------------------------------------- instants: At / After
def test_at__instant_inside_window_is_returned_once():
    assert instants_in(At(t(hours=2)), T0, T0, t(hours=3)) == InstantRange(
        t(hours=2), t(hours=2), 1
    )


def test_window__cursor_is_excluded_and_cutoff_is_included():
    spec = At(t(hours=2))
    assert instants_in(spec, T0, t(hours=2), t(hours=3)) is None
    assert instants_in(spec, T0, t(hours=2) - US, t(hours=2)).count == 1
    assert instants_in(spec, T0, T0, t(hours=2) - US) is None


def test_at__at_or_before_acceptance_never_fires():
    for when in (T0, t(hours=-1)):
        assert instants_in(At(when), T0, T0, t(days=365)) is None
        assert next_instant_after(At(when), T0, T0) is None


def test_after__single_instant_is_acceptance_plus_delay():
    spec = After(timedelta(minutes=5))
    assert instants_in(spec, T0, T0, t(days=1)) == InstantRange(t(minutes=5), t(minutes=5), 1)
    assert next_instant_after(spec, T0, T0) == t(minutes=5)
    assert next_instant_after(spec, T0, t(minutes=5)) is None


def test_instants_in__cutoff_at_or_behind_cursor_is_empty():
    spec = Every(US)
    assert instants_in(spec, T0, t(hours=1), t(hours=1)) is None
    assert instants_in(spec, T0, t(hours=1), t(minutes=59)) is None


# ---------------------------------------------------------------- instants: Every
def test_every__default_anchor_first_instant_is_one_interval_after_acceptance():
    spec = Every(H)
    assert instants_in(spec, T0, T0, t(hours=1)) == InstantRange(t(hours=1), t(hours=1), 1)
    assert instants_in(spec, T0, T0, t(hours=1) - US) is None
    assert next_instant_after(spec, T0, T0) == t(hours=1)


def test_every__explicit_anchor_equal_to_acceptance_behaves_like_the_default():
    assert instants_in(Every(H, anchor=T0), T0, T0, t(hours=5)) == instants_in(
        Every(H), T0, T0, t(hours=5)
    )


def test_every__past_anchor_keeps_its_grid_and_first_fires_after_acceptance():
    spec = Every(H, anchor=t(days=-3, minutes=15))
    found = instants_in(spec, T0, T0, t(hours=3))
    assert found == InstantRange(t(minutes=15), t(hours=2, minutes=15), 3)
    assert next_instant_after(spec, T0, T0) == t(minutes=15)


def test_every__future_anchor_is_itself_the_first_instant():
    spec = Every(H, anchor=t(days=2))
    assert next_instant_after(spec, T0, T0) == t(days=2)
    assert instants_in(spec, T0, T0, t(days=2)) == InstantRange(t(days=2), t(days=2), 1)


def test_every__no_instant_before_a_future_anchor():
    spec = Every(timedelta(minutes=1), anchor=t(days=2))
    assert instants_in(spec, T0, T0, t(days=2) - US) is None


def test_every__grid_points_on_both_window_ends():
    spec = Every(H)
    found = instants_in(spec, T0, t(hours=2), t(hours=5))
    assert found == InstantRange(t(hours=3), t(hours=5), 3)
    assert instants_in(spec, T0, t(hours=2), t(hours=5) - US) == InstantRange(
        t(hours=3), t(hours=4), 2
    )
    assert instants_in(spec, T0, t(hours=2) + US, t(hours=3) - US) is None


def test_every__million_instant_range_is_counted_not_enumerated():
    found = instants_in(Every(US), T0, T0, t(seconds=1))
    assert found == InstantRange(t(microseconds=1), t(seconds=1), 1_000_000)
    # Three hundred years of microseconds: enumeration would never finish.
    huge = instants_in(Every(US), T0, T0, datetime(2330, 1, 1, tzinfo=UTC))
    assert huge.count == (datetime(2330, 1, 1, tzinfo=UTC) - T0) // US


def test_next_instant_after__on_and_between_grid_points():
    spec = Every(H)
    assert next_instant_after(spec, T0, t(hours=3)) == t(hours=4)
    assert next_instant_after(spec, T0, t(hours=3) - US) == t(hours=3)


def test_instants_beyond_datetime_max_do_not_exist():
    end = datetime.max.replace(tzinfo=UTC)
    assert next_instant_after(Every(timedelta(days=1000)), T0, end - US) is None
    far = After(timedelta(days=999_999_999))
    assert instants_in(far, T0, T0, end) is None
    assert next_instant_after(far, T0, T0) is None


def test_instants_in__returns_utc_for_non_utc_arguments():
    found = instants_in(Every(H), datetime(2030, 1, 1, 2, tzinfo=PLUS_2), T0, t(hours=1))
    assert found.first == t(hours=1)
    assert found.first.tzinfo is UTC


def test_instants_in__naive_argument_is_refused_with_ds103():
    with pytest.raises(NaiveDatetime):
        instants_in(Every(H), T0, T0, datetime(2030, 1, 2))


def test_instants_in__non_datetime_argument_is_invalid_argument():
    with pytest.raises(InvalidArgument):
        instants_in(Every(H), T0, "2030-01-01", t(hours=1))


def test_instants_in__non_spec_is_invalid_spec():
    with pytest.raises(InvalidScheduleSpec):
        instants_in("every hour", T0, T0, t(hours=1))


# ---------------------------------------------------------------- sub-microsecond values
class _NanoDatetime(datetime):
    """What pandas' Timestamp looks like to the API: a datetime with a ``nanosecond`` field."""

    nanosecond = 500


class _NanoTimedelta(timedelta):
    """pandas' Timedelta: a timedelta with a ``nanoseconds`` field."""

    nanoseconds = 500


def test_sub_microsecond_values_are_refused_with_ds104_not_truncated():
    """docs/diagnostics.md DS104: PostgreSQL keeps microseconds, so a value finer than that is
    refused (the caller rounds it), never silently truncated."""
    from durable_schedule.errors import SubMicrosecondPrecision
    from durable_schedule.evaluation.bounds import Bounds

    nano = _NanoDatetime(2030, 1, 1, tzinfo=UTC)
    for build in (lambda: At(nano), lambda: Every(H, anchor=nano),
                  lambda: Every(_NanoTimedelta(hours=1)), lambda: After(_NanoTimedelta(hours=1)),
                  lambda: Bounds(start_at=nano)):
        with pytest.raises(SubMicrosecondPrecision) as info:
            build()
        assert info.value.code == "DS104"
    from durable_schedule.evaluation.jitter import validate as jitter
    from durable_schedule.schedules.validation import safety_window

    for check in (lambda: jitter(_NanoTimedelta(minutes=1), Every(H)),
                  lambda: safety_window(_NanoTimedelta(minutes=1))):
        with pytest.raises(SubMicrosecondPrecision):
            check()
    # Whole microseconds in those types are plain values: accepted, stored as plain datetimes.
    whole = At(type("_WholeDatetime", (datetime,), {"nanosecond": 0})(2030, 1, 1, tzinfo=UTC))
    assert type(whole.when) is datetime and whole.when == T0
