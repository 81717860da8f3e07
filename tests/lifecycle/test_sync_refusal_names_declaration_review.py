"""A declaration the API refuses stops the whole sync, changes nothing (one transaction), and the
error names the declaration: a deploy's sync applies many declarations, and a refusal such as
DS117 (a changed declaration whose instants all lie in the past) names only the facts it
checked, so the operator could not tell which declaration to fix (docs/schedules.md
"Schedules declared in code")."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule import schedules
from durable_schedule.errors import ScheduleNeverFires, ScheduleNotFound
from durable_schedule.processor import process_due
from durable_schedule.schedules import declared
from tests.conftest import T0
from tests.lifecycle.test_declared import ANCHOR, touch_target

pytestmark = pytest.mark.django_db(transaction=True)
ONCE = schedules.At(T0 + timedelta(hours=1))


def declaration(schedule_id, spec, **payload) -> declared.Declaration:
    return declared.Declaration(
        scope="tenant-a", schedule_id=schedule_id, spec=spec, target=touch_target(**payload)
    )


def fired_one_shot(clock) -> schedules.ScheduleInfo:
    declared.sync(declared=[declaration("once", ONCE, v=1)])
    clock.set(T0 + timedelta(hours=1))
    process_due(max_schedules=10, lease_owner="review-sync")
    info = schedules.get("tenant-a", "once")
    assert info.state == "completed"
    return info


def test_sync__a_refused_declaration_is_named_and_the_whole_sync_changes_nothing(
    committed_clock,
):
    before = fired_one_shot(committed_clock)
    every = schedules.Every(timedelta(hours=1), anchor=ANCHOR)
    with pytest.raises(ScheduleNeverFires) as err:
        declared.sync(declared=[declaration("another", every), declaration("once", ONCE, v=2)])
    assert err.value.code == "DS117"
    assert (err.value.context["scope"], err.value.context["schedule_id"]) == ("tenant-a", "once")
    assert "schedule_id='once'" in str(err.value) and "nothing was changed" in str(err.value)
    assert schedules.get("tenant-a", "once") == before
    with pytest.raises(ScheduleNotFound):
        schedules.get("tenant-a", "another")


def test_command__names_the_refused_declaration(committed_clock):
    fired_one_shot(committed_clock)
    changed = schedules.declare("once", ONCE, target=touch_target(v=2), scope="tenant-a")
    try:
        with pytest.raises(CommandError) as err:
            call_command("sync_schedules", stdout=StringIO())
    finally:
        declared.forget(*changed.key)
    assert "DS117" in str(err.value) and "schedule_id='once'" in str(err.value)
    with pytest.raises(ScheduleNotFound):  # the demo app's declaration was not applied either
        schedules.get("demo", "demo-hourly-touch")
