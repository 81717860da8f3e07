"""``sync(declared=...)`` takes a list of ``Declaration`` values: anything else (a string, a
mapping, a number, a list holding something else) is refused with DS406 before anything is
read or written, instead of a bare ``AttributeError`` / ``TypeError`` midway or a dict's keys
silently standing for the declarations (docs/schedules.md "Schedules declared in code")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidArgument, ScheduleNotFound
from durable_schedule.schedules import declared
from tests.lifecycle.test_declared import ANCHOR, touch_target

pytestmark = pytest.mark.django_db(transaction=True)


def declaration(schedule_id: str = "nightly") -> declared.Declaration:
    return declared.Declaration(scope="tenant-a", schedule_id=schedule_id,
                                spec=schedules.Every(timedelta(hours=1), anchor=ANCHOR),
                                target=touch_target(kind="a"))


@pytest.mark.parametrize("bad", ["nightly", b"x", 5, {"nightly": 1}, {}])
def test_sync__a_declared_value_that_is_not_a_list_is_refused(committed_clock, bad):
    with pytest.raises(InvalidArgument) as err:
        declared.sync(declared=bad, prune=True, allow_empty=True)
    assert err.value.code == "DS406" and err.value.context["field"] == "declared"


def test_sync__a_list_holding_something_else_is_refused_and_changes_nothing(committed_clock):
    with pytest.raises(InvalidArgument) as err:
        declared.sync(declared=[declaration("first"), "second"])
    assert err.value.code == "DS406" and err.value.context["position"] == 1
    with pytest.raises(ScheduleNotFound):  # the valid declaration before it was not applied
        schedules.get("tenant-a", "first")


def test_sync__a_tuple_or_a_generator_of_declarations_is_a_list(committed_clock):
    assert declared.sync(declared=(declaration(),)).created == [("tenant-a", "nightly")]
    again = declared.sync(declared=(d for d in [declaration()]))
    assert again.unchanged == [("tenant-a", "nightly")]
