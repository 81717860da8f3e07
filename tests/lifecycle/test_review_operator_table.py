"""Adversarial review of the operator's table (docs/schedules.md "State or reason -> what you
see -> the one action that fixes it"): the documented fix of a completed schedule works."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from tests.lifecycle.test_buffer_all import at, finish_running, ran
from tests.schedules.conftest import SCOPE, TEN, create, definition, dispatch, run_pass

pytestmark = pytest.mark.django_db


def test_a_schedule_completed_by_max_runs_runs_again_after_an_update_raising_it(clock, target):
    create("s", schedules.Every(TEN), target, max_runs=1)
    run_pass(clock, at(10))
    assert definition("s")["state"] == "completed" and dispatch("s")[0] is None
    info = schedules.get(SCOPE, "s")
    updated = schedules.update(SCOPE, "s", expected_revision=info.revision, max_runs=2)
    assert updated.state == "active"
    finish_running()
    run_pass(clock, at(20))
    # The grid of the new generation starts at its acceptance (12:10 here): 12:20 runs.
    assert len(ran()) == 2 and definition("s")["state"] == "completed"


def test_a_schedule_completed_by_end_at_runs_again_after_an_update_removing_it(clock, target):
    create("s", schedules.Every(TEN), target, end_at=at(10))
    run_pass(clock, at(10))
    run_pass(clock, at(11))
    assert definition("s")["state"] == "completed"
    info = schedules.get(SCOPE, "s")
    assert schedules.update(SCOPE, "s", expected_revision=info.revision,
                            end_at=None).state == "active"
    finish_running()
    run_pass(clock, at(21))
    assert len(ran()) == 2


@pytest.mark.parametrize("note", [None, "   ", 5, "x" * 1001])
def test_a_bad_pause_note_is_refused_naming_the_note_and_changes_nothing(clock, target, note):
    from durable_schedule.errors import InvalidArgument

    create("s", schedules.Every(TEN), target)
    with pytest.raises(InvalidArgument) as refused:
        schedules.pause(SCOPE, "s", note)
    assert refused.value.context["field"] == "note" and "note" in refused.value.message
    assert definition("s")["state"] == "active"
