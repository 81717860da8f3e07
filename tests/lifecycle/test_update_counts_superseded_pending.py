"""Every skipped instant is counted: an ``update`` supersedes the pending occurrences of the
generation it replaces -- a ``queue_one`` coalesced occurrence waiting for the slot, the
buffered occurrences of ``buffer_all`` -- and their instants never run (the new generation
starts at its acceptance, after them), so they are counted in ``missed["superseded"]`` like
the instants no pass evaluated (docs/schedules.md "Missed instants")."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    history,
    occurrences,
    run_pass,
)

pytestmark = pytest.mark.django_db


def update(clock, at, **changes):
    clock.set(at)
    info = schedules.get(SCOPE, "s")
    return schedules.update(SCOPE, "s", expected_revision=info.revision, **changes)


def test_update__counts_the_instants_of_a_superseded_coalesced_occurrence(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target)       # queue_one
    run_pass(clock, T0 + TEN + MINUTE)                          # 12:10 runs and holds the slot
    run_pass(clock, T0 + 2 * TEN + MINUTE)                      # 12:20 coalesces
    run_pass(clock, T0 + 4 * TEN + MINUTE)                      # 12:30, 12:40 join: 3 instants
    assert [(o[1], o[4]) for o in occurrences("s")][-1] == ("coalesced", "pending")
    info = update(clock, T0 + 4 * TEN + 2 * MINUTE, target=target)
    assert [o[4] for o in occurrences("s")][-1] == "superseded"
    assert info.missed == {"superseded": 3}
    _event, _actor, detail = history("s")[-1]
    assert detail["not_evaluated"] is None  # every instant was evaluated: they were pending


def test_update__counts_the_instants_of_superseded_buffered_occurrences(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="buffer_all")
    run_pass(clock, T0 + TEN + MINUTE)                          # 12:10 runs
    run_pass(clock, T0 + 2 * TEN + MINUTE)                      # 12:20 buffered
    run_pass(clock, T0 + 5 * TEN + MINUTE)                      # 12:30-12:50: one recovery
    assert [(o[1], o[4]) for o in occurrences("s")][1:] == [
        ("nominal", "pending"), ("recovery", "pending")]
    info = update(clock, T0 + 5 * TEN + 2 * MINUTE, target=target)
    assert info.missed == {"superseded": 4}                     # 12:20 + 12:30..12:50
