"""A declaration list that names one identity twice: the same values are one declaration (one
generation, the next sync a no-op); different values are refused with DS145 before anything
changes. Applied in turn, two different values would write two generations on every sync, one
undoing the other, so an unchanged deploy would never be a no-op (docs/schedules.md "Schedules
declared in code")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import DeclarationConflict, ScheduleNotFound
from durable_schedule.schedules import declared
from tests.lifecycle.test_declared import ANCHOR, touch_target

pytestmark = pytest.mark.django_db(transaction=True)


def declaration(schedule_id="nightly", **payload) -> declared.Declaration:
    return declared.Declaration(
        scope="tenant-a",
        schedule_id=schedule_id,
        spec=schedules.Every(timedelta(hours=1), anchor=ANCHOR),
        target=touch_target(**payload),
    )


def test_sync__one_identity_listed_twice_alike_is_one_generation_and_then_a_no_op(
    committed_clock,
):
    twice = [declaration(kind="a"), declaration(kind="a")]
    assert declared.sync(declared=twice).created == [("tenant-a", "nightly")]
    committed_clock.advance(timedelta(minutes=5))
    again = declared.sync(declared=twice)
    assert again.unchanged == [("tenant-a", "nightly")] and not again.updated, again.lines()
    assert schedules.get("tenant-a", "nightly").generation == 1


@pytest.mark.parametrize(("first", "second"), [("a", "b"), (1, True), (1, 1.0)])
def test_sync__one_identity_listed_twice_with_different_values_is_refused_and_changes_nothing(
    committed_clock, first, second
):
    declared.sync(declared=[declaration(kind="before")])
    before = schedules.get("tenant-a", "nightly")
    listed = [declaration("other"), declaration(kind=first), declaration(kind=second)]
    for attempt in (listed, listed[::-1]):
        with pytest.raises(DeclarationConflict) as err:
            declared.sync(declared=attempt)
        assert err.value.code == "DS145"
        assert schedules.get("tenant-a", "nightly") == before  # no generation, no revision
        with pytest.raises(ScheduleNotFound):  # the other declaration was not applied either
            schedules.get("tenant-a", "other")


def test_declare__payloads_that_python_calls_equal_but_jsonb_does_not_are_two_declarations():
    try:
        schedules.declare(
            "review-dup",
            schedules.Every(timedelta(hours=1), anchor=ANCHOR),
            target=touch_target(flag=1),
            scope="tenant-a",
        )
        with pytest.raises(DeclarationConflict):
            schedules.declare(
                "review-dup",
                schedules.Every(timedelta(hours=1), anchor=ANCHOR),
                target=touch_target(flag=True),
                scope="tenant-a",
            )
        assert declared.declarations()[
            [d.key for d in declared.declarations()].index(("tenant-a", "review-dup"))
        ].target.payload == {"flag": 1}
    finally:
        declared.forget("tenant-a", "review-dup")
