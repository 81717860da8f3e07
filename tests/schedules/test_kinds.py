"""docs/protocol/schedules.md rule S2 through the processor: At fires once at its instant; After is
anchored on the schedule's accepted_at_utc; Every with the default, a past and a future anchor."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.processor import PassCounts
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SECOND,
    T0,
    create,
    definition,
    dispatch,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def firsts(schedule_id):
    return [(kind, first) for _g, kind, first, _l, _s, _w in occurrences(schedule_id)]


def test_at__fires_once_at_its_instant_and_completes(clock, target):
    when = T0 + 30 * MINUTE
    create("once", schedules.At(when), target)
    assert dispatch("once")[0] == when
    assert run_pass(clock, when - timedelta(microseconds=1)) == PassCounts()
    counts = run_pass(clock, when)
    assert (counts.claimed, counts.materialized) == (1, 1)
    assert counts.outcomes[0].completed
    assert firsts("once") == [("nominal", when)]
    assert definition("once")["state"] == "completed"
    assert dispatch("once")[0] is None
    assert run_pass(clock, when + 10 * HOUR) == PassCounts()
    assert len(works()) == 1


def test_after__is_anchored_on_the_schedules_acceptance_not_on_work_acceptance(clock, target):
    clock.set(T0 + 5 * SECOND)
    info = create("later", schedules.After(10 * MINUTE), target)
    assert info.accepted_at_utc == T0 + 5 * SECOND
    instant = T0 + 5 * SECOND + 10 * MINUTE
    late = instant + 20 * SECOND
    counts = run_pass(clock, late)
    assert counts.materialized == 1
    assert firsts("later") == [("nominal", instant)]
    [(accepted_at,)] = rows("select accepted_at from durable_work")
    assert accepted_at == late  # the Work's own clock sample, which is not the anchor
    assert definition("later")["state"] == "completed"


def test_after__an_update_reanchors_on_the_new_generations_acceptance(clock, target):
    create("later", schedules.After(10 * MINUTE), target)
    clock.set(T0 + 4 * MINUTE)
    schedules.update("tenant-a", "later", expected_revision=1)
    assert run_pass(clock, T0 + 10 * MINUTE) == PassCounts()
    assert run_pass(clock, T0 + 14 * MINUTE).materialized == 1
    assert [(g, first) for g, _k, first, *_ in occurrences("later")] == [(2, T0 + 14 * MINUTE)]


def test_every__default_anchor_is_acceptance_and_k0_never_fires(clock, target):
    create("hourly", schedules.Every(HOUR), target)
    assert run_pass(clock, T0 + HOUR - SECOND) == PassCounts()
    assert run_pass(clock, T0 + HOUR).materialized == 1
    assert firsts("hourly") == [("nominal", T0 + HOUR)]
    assert dispatch("hourly")[0] == T0 + 2 * HOUR
    assert definition("hourly")["state"] == "active"


def test_every__a_past_anchor_keeps_its_grid_and_backfills_nothing(clock, target):
    create("grid", schedules.Every(HOUR, anchor=T0 - 90 * MINUTE), target)
    assert dispatch("grid")[0] == T0 + 30 * MINUTE
    run_pass(clock, T0 + 30 * MINUTE)
    [(work_id, *_)] = works()
    set_work_state(work_id, "succeeded")  # free the slot, so the next instant is nominal
    run_pass(clock, T0 + 90 * MINUTE)
    assert firsts("grid") == [("nominal", T0 + 30 * MINUTE), ("nominal", T0 + 90 * MINUTE)]
    assert len(works()) == 2


def test_every__a_future_anchor_fires_first_at_the_anchor(clock, target):
    anchor = T0 + 3 * HOUR
    create("future", schedules.Every(HOUR, anchor=anchor), target)
    assert dispatch("future")[0] == anchor
    assert run_pass(clock, anchor - SECOND) == PassCounts()
    run_pass(clock, anchor)
    assert firsts("future") == [("nominal", anchor)]
