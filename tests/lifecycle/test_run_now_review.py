"""Run now is compare-or-return on its request id whatever happened to the schedule since: a
retried ``trigger`` whose first answer was lost learns that its run took place, even after the
schedule was deleted, suspended or completed; a new request id on such a schedule is refused
and writes nothing (docs/schedules.md "Run now")."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import ScheduleDeleted, ScheduleNotTriggerable
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    history,
    occurrences,
    run_pass,
    works,
)

pytestmark = pytest.mark.django_db


def _end(schedule_id: str, how: str, clock) -> None:
    if how == "deleted":
        schedules.delete(SCOPE, schedule_id, actor="ops")
    elif how == "suspended":
        schedules.suspend(SCOPE, schedule_id, "provider outage", actor="ops")
    else:  # completed: the At instant runs beside the manual Work (allow_all)
        run_pass(clock, T0 + TEN)
    assert schedules.get(SCOPE, schedule_id).state == how


@pytest.mark.parametrize("how", ["deleted", "suspended", "completed"])
def test_trigger__a_retried_request_id_returns_its_run_after_the_schedule_ended(clock, target, how):
    create("s", schedules.At(T0 + TEN), target, overlap="allow_all")
    clock.set(T0 + MINUTE)
    first = schedules.trigger(SCOPE, "s", "deploy-42", actor="alice")
    _end("s", how, clock)
    before = (occurrences("s"), works(), history("s"))
    again = schedules.trigger(SCOPE, "s", "deploy-42", actor="alice")
    assert not again.created
    assert (again.work_id, again.occurrence_first_utc) == (
        first.work_id,
        first.occurrence_first_utc,
    )
    assert again.schedule.state == how
    assert (occurrences("s"), works(), history("s")) == before  # nothing written


@pytest.mark.parametrize(
    ("how", "error", "code"),
    [
        ("deleted", ScheduleDeleted, "DS107"),
        ("suspended", ScheduleNotTriggerable, "DS151"),
        ("completed", ScheduleNotTriggerable, "DS151"),
    ],
)
def test_trigger__a_new_request_id_after_the_schedule_ended_is_refused_and_writes_nothing(
    clock, target, how, error, code
):
    create("s", schedules.At(T0 + TEN), target, overlap="allow_all")
    clock.set(T0 + MINUTE)
    schedules.trigger(SCOPE, "s", "deploy-42")
    _end("s", how, clock)
    before = (occurrences("s"), works(), history("s"))
    with pytest.raises(error) as err:
        schedules.trigger(SCOPE, "s", "deploy-43")
    assert err.value.code == code
    assert (occurrences("s"), works(), history("s")) == before
