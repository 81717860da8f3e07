"""``resume(catch_up="misfire_policy")`` hands the instants that fell while paused to the
generation's misfire policy, however many there are (docs/schedules.md "Pause and resume"):
a single missed instant is skipped under misfire ``skip`` and runs as a ``recovery``
occurrence under ``run_once``, exactly as a range of several does; it does not run as an
on-time ``nominal`` occurrence because the pause measured its lateness from the resume."""

from __future__ import annotations

import json

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    occurrences,
    run_pass,
    works,
)

pytestmark = pytest.mark.django_db


def _one_instant_missed_while_paused(clock, target, misfire):
    create("s", schedules.Every(TEN, anchor=T0), target, misfire=misfire)
    clock.set(T0 + MINUTE)
    schedules.pause(SCOPE, "s", "maintenance", actor="ops")
    clock.set(T0 + 15 * MINUTE)  # 00:10 fell while paused
    schedules.resume(SCOPE, "s", actor="ops")  # catch_up="misfire_policy"
    run_pass(clock, T0 + 16 * MINUTE)


def test_resume__one_instant_missed_while_paused_is_skipped_under_misfire_skip(clock, target):
    _one_instant_missed_while_paused(clock, target, "skip")
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")] == [
        ("recovery", T0 + TEN, T0 + TEN, "skipped")]
    assert works() == []
    assert json.loads(definition("s")["missed"]) == {"misfire": 1}


def test_resume__one_instant_missed_while_paused_is_a_recovery_run_under_run_once(clock,
                                                                                 target):
    _one_instant_missed_while_paused(clock, target, "run_once")
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")] == [
        ("recovery", T0 + TEN, T0 + TEN, "materialized")]
    assert len(works()) == 1


def test_resume__an_instant_after_the_resume_is_nominal_again(clock, target):
    _one_instant_missed_while_paused(clock, target, "skip")
    run_pass(clock, T0 + 2 * TEN)  # 00:20 fell after the resume: on time
    assert [(o[1], o[2], o[4]) for o in occurrences("s")][-1] == (
        "nominal", T0 + 2 * TEN, "materialized")
