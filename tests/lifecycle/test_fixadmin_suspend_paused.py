"""``suspend()`` of a paused schedule returned it unchanged and silently dropped the note: the
operator believed a suspension with its evidence was recorded. A paused schedule is stopped by
an operator decision that ``resume`` undoes; a suspension is repaired with ``update``. Suspend
is for active schedules only (what the admin offers), the mirror of ``pause`` refusing a
suspended schedule (DS146): it is refused with ``ScheduleNotSuspendable`` (DS175) and nothing
changes (docs/schedules.md "Decisions recorded")."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import ScheduleNotSuspendable
from tests.schedules.conftest import SCOPE, TEN, create, definition, dispatch, history

pytestmark = pytest.mark.django_db


def test_suspend__of_a_paused_schedule_is_refused_and_changes_nothing(clock, target):
    create("s", schedules.Every(TEN), target)
    paused = schedules.pause(SCOPE, "s", "db maintenance", actor="alice")
    before, events, armed = definition("s"), history("s"), dispatch("s")
    with pytest.raises(ScheduleNotSuspendable) as err:
        schedules.suspend(SCOPE, "s", "vendor outage", actor="bob",
                          expected_revision=paused.revision)
    assert err.value.code == "DS175"
    assert "paused" in err.value.message
    assert definition("s") == before and history("s") == events and dispatch("s") == armed
    resumed = schedules.resume(SCOPE, "s", actor="alice")  # the pause still works as before
    assert resumed.state == "active"


def test_suspend__of_suspended_or_completed_stays_unchanged(clock, target):
    create("s", schedules.Every(TEN), target)
    first = schedules.suspend(SCOPE, "s", "broken", actor="alice")
    again = schedules.suspend(SCOPE, "s", "twice", actor="bob")
    assert (again.state, again.revision) == ("suspended", first.revision)
