"""Grammar cronos-v1: what is accepted (with the sets it means) and what is refused (DS125
naming the field and the character position)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_schedule.errors import InvalidCronExpression
from durable_schedule.evaluation.cron import MACROS, Cron, parse
from durable_schedule.evaluation.cron.seed import seed_for

ALL_MIN = tuple(range(60))


@pytest.mark.parametrize(("expression", "attr", "values"), [
    ("*/15 * * * *", "minutes", (0, 15, 30, 45)),
    ("5/15 * * * *", "minutes", (5, 20, 35, 50)),
    ("10-20/5 * * * *", "minutes", (10, 15, 20)),
    ("1,5-7,30 * * * *", "minutes", (1, 5, 6, 7, 30)),
    ("? * * * *", "minutes", ALL_MIN),
    ("30,45-15/2 1 * * *", "minutes",  # the README's example: 45-15/2 wraps the hour
     (1, 3, 5, 7, 9, 11, 13, 15, 30, 45, 47, 49, 51, 53, 55, 57, 59)),
    ("0 22-1 * * *", "hours", (0, 1, 22, 23)),
    ("0 0 * DEC-FEB *", "months", (1, 2, 12)),
    ("0 0 * NOV-MAR/2 *", "months", (1, 3, 11)),
    ("0 0 * jan,Jul *", "months", (1, 7)),
    ("0 0 * * FRI-MON", "weekdays", (0, 1, 5, 6)),
    ("0 0 * * 7", "weekdays", (0,)),
    ("0 0 * * 0,7", "weekdays", (0,)),
    ("0 0 * * 5-7", "weekdays", (0, 5, 6)),
    ("0 0 * * 5-1/2", "weekdays", (0, 5)),
    ("0 0 1-31/10 * *", "days", (1, 11, 21, 31)),
    ("7 0 0 * * *", "seconds", (7,)),
    ("0 0 * * *", "seconds", (0,)),
])
def test_accepted_expressions_mean_these_sets(expression, attr, values):
    assert getattr(parse(expression), attr) == values


@pytest.mark.parametrize(("expression", "flags"), [
    ("0 0 L * *", {"dom_last": True, "dom_last_offset": 0, "dom_nearest_weekday": False}),
    ("0 0 L-3 * *", {"dom_last": True, "dom_last_offset": 3}),
    ("0 0 LW * *", {"dom_last": True, "dom_nearest_weekday": True}),
    ("0 0 L-2W * *", {"dom_last": True, "dom_last_offset": 2, "dom_nearest_weekday": True}),
    ("0 0 15W * *", {"dom_nearest_weekday": True, "days": (15,)}),
    ("0 0 * * 5L", {"dow_last": True, "weekdays": (5,)}),
    ("0 0 * * FRIL", {"dow_last": True, "weekdays": (5,)}),
    ("0 0 * * 6#3", {"dow_nth": 3, "weekdays": (6,)}),
    ("0 0 ? 1 MON#1", {"dow_nth": 1, "weekdays": (1,), "months": (1,)}),
])
def test_special_characters_set_their_modifiers(expression, flags):
    p = parse(expression)
    for key, value in flags.items():
        assert getattr(p, key) == value


@pytest.mark.parametrize(("expression", "interval"), [
    ("30 1 * * *", False), ("0 0,45 1,2 * * *", False), ("0 30 1 * * *", False),
    ("30 * * * *", True), ("* 1 * * *", True), ("0,5 0/10 1 * * *", True),
    ("0 1-2 * * *", True), ("0 0 * * *", False), ("0 0 */2 * *", False),  # dom cannot
    ("H 2 * * *", False), ("H/10 2 * * *", True), ("@hourly", True), ("@daily", False),
])
def test_interval_classification_is_cronos(expression, interval):
    assert parse(expression).interval is interval


@pytest.mark.parametrize(("macro", "equivalent"), list(MACROS.items()))
def test_macros_equal_their_expansion_without_jitter(macro, equivalent):
    a, b = parse(macro), parse(equivalent)
    for attr in ("seconds", "minutes", "hours", "days", "months", "weekdays", "interval"):
        assert getattr(a, attr) == getattr(b, attr)
    assert not a.uses_h


def test_macros_are_case_insensitive_and_may_have_surrounding_space():
    assert parse("  @Daily\t").hours == (0,)


@pytest.mark.parametrize(("expression", "field", "position"), [
    ("61 * * * *", "minute", 0),
    ("* 24 * * *", "hour", 2),
    ("* * 32 * *", "day-of-month", 4),
    ("* * 0 * *", "day-of-month", 4),
    ("* * * 13 *", "month", 6),
    ("* * * * 8", "day-of-week", 8),
    ("*/0 * * * *", "minute", 2),
    ("*/60 * * * *", "minute", 2),
    ("1,* * * * *", "minute", 2),
    ("H,5 * * * *", "minute", 1),
    ("100 * * * *", "minute", 0),
    ("* * * * JANUARY", "day-of-week", 8),
    ("* * * JANUARY *", "month", 9),
    ("* * * * MON#6", "day-of-week", 12),
    ("* * * * MON#0", "day-of-week", 12),
    ("* * 5W,6 * *", "day-of-month", 6),
    ("* * LW-1 * *", "day-of-month", 6),
    ("* * L-31 * *", "day-of-month", 6),
    ("* * * * L", "day-of-week", 8),
    ("* * 1-5W * *", "day-of-month", 7),
    ("* * * * 1-5L", "day-of-week", 11),
    ("60 * * * * *", "second", 0),
    ("* * * * * 5#2,1", "day-of-week", 13),
    ("* * H/29 * *", "day-of-month", 6),
    ("* * * FOO *", "month", 6),
])
def test_refused_expressions_name_field_and_position(expression, field, position):
    with pytest.raises(InvalidCronExpression) as info:
        parse(expression)
    assert info.value.code == "DS125"
    assert info.value.context["field"] == field
    assert info.value.context["position"] == position
    assert field in info.value.message


@pytest.mark.parametrize(("expression", "position"), [
    ("", 0), ("* * * *", 6), ("* * * * * * *", 12), ("@hourlyx", 0), ("@every_hour", 0),
    ("é * * * *", 0), ("* * * * *\n", 9), ("@daily *", 0), ("x" * 201, 200),
])
def test_refused_whole_expressions_give_a_position(expression, position):
    with pytest.raises(InvalidCronExpression) as info:
        parse(expression)
    assert info.value.context["position"] == position
    assert info.value.context["field"] is None


def test_non_string_expression_is_refused():
    with pytest.raises(InvalidCronExpression):
        parse(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- H
def test_h_is_deterministic_per_identity_and_spreads_across_identities():
    one = parse("H H * * *", seed_for("tenant", "report"))
    again = parse("H H * * *", seed_for("tenant", "report"))
    assert (one.minutes, one.hours) == (again.minutes, again.hours)
    spread = {parse("H H * * *", seed_for("tenant", f"job-{i}")).minutes for i in range(50)}
    assert len(spread) > 20


def test_h_in_day_of_month_stays_within_1_to_28():
    days = {parse("0 0 H * *", seed_for("s", f"id-{i}")).days for i in range(300)}
    assert all(len(d) == 1 and 1 <= d[0] <= 28 for d in days)
    assert len(days) > 20


def test_h_step_draws_an_offset_below_the_step():
    for i in range(50):
        minutes = parse("H/15 * * * *", seed_for("s", str(i))).minutes
        assert len(minutes) == 4 and minutes[0] < 15
        assert [b - a for a, b in zip(minutes, minutes[1:], strict=False)] == [15, 15, 15]


def test_h_step_in_day_of_week_goes_up_to_7_as_any_step_there():
    """docs: steps are 1 to the field's highest value (7 in day-of-week, as ``*/7`` and as in
    Cronos); ``H/7`` is one weekday drawn from 0-6 (Sunday counted once)."""
    drawn = set()
    for i in range(100):
        weekdays = parse("0 0 * * H/7", seed_for("s", str(i))).weekdays
        assert len(weekdays) == 1 and 0 <= weekdays[0] <= 6
        drawn.add(weekdays[0])
    assert drawn == set(range(7))
    assert parse("0 0 * * H/6", seed_for("s", "x")).weekdays[0] < 6
    with pytest.raises(InvalidCronExpression) as info:
        parse("0 0 * * H/8")
    assert info.value.context["position"] == 10


def test_the_seed_hash_is_the_documented_one():
    # docs/schedules.md "H": SHA-256 over framed domain, scope and schedule id; first 8 bytes.
    import hashlib

    def frame(b: bytes) -> bytes:
        return len(b).to_bytes(8, "big") + b

    digest = hashlib.sha256(frame(b"durable_schedule.cron.seed.v1") + frame(b"acme")
                            + frame(b"nightly")).digest()
    assert seed_for("acme", "nightly") == int.from_bytes(digest[:8], "big")


# ---------------------------------------------------------------- the spec
def test_cron_spec_validates_zone_and_dst_policy():
    from durable_schedule.errors import InvalidDstPolicy, UnknownTimeZone

    with pytest.raises(UnknownTimeZone) as info:
        Cron("* * * * *", "Mars/Base")
    assert info.value.code == "DS126"
    with pytest.raises(InvalidDstPolicy):
        Cron("* * * * *", dst_gap="later")
    with pytest.raises(InvalidDstPolicy):
        Cron("* * * * *", dst_fold="both")
    with pytest.raises(InvalidCronExpression):
        Cron("* * * *")


def test_h_without_a_seed_parses_but_does_not_evaluate():
    from durable_schedule.errors import CronIdentityRequired

    spec = Cron("H * * * *")
    with pytest.raises(CronIdentityRequired) as info:
        spec.evaluator()
    assert info.value.code == "DS128"


def test_day_of_month_and_day_of_week_mean_and():
    # Cronos, not Vixie: "0 0 13 * 5" is Friday the 13th only.
    ev = Cron("0 0 13 * 5").evaluator()
    got = [datetime.fromtimestamp(o.utc, UTC).date().isoformat()
           for o in ev.upcoming(int(datetime(2026, 1, 1, tzinfo=UTC).timestamp()), 3)]
    assert got == ["2026-02-13", "2026-03-13", "2026-11-13"]
