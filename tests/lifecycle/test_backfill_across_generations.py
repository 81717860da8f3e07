"""A backfill never re-runs an instant an earlier generation of the schedule already ran: an
update that keeps the grid (a new payload, a new overlap policy) makes a new generation whose
instants coincide with the old one's, and the old occurrences' Work covers them. They are
reported in ``existing``; ``rerun_earlier_generations=True`` runs them again on purpose
(docs/schedules.md "Backfill")."""

from __future__ import annotations

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from durable_schedule.errors import InvalidArgument
from tests.schedules.conftest import (
    HOUR,
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


def _payload_update(schedule_id: str = "s") -> None:
    info = schedules.get(SCOPE, schedule_id)
    schedules.update(SCOPE, schedule_id, expected_revision=info.revision,
                     target=schedule_targets.report.target(payload={"report": "v2"}))


def test_backfill__an_instant_an_earlier_generation_ran_is_existing(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="allow_all")
    run_pass(clock, T0 + TEN + MINUTE)          # generation 1 runs 00:10
    clock.set(T0 + 2 * TEN - MINUTE)
    _payload_update()                           # generation 2: same grid, new payload
    assert schedules.get(SCOPE, "s").generation == 2
    before = (occurrences("s"), works())
    done = schedules.backfill(SCOPE, "s", T0 + TEN, T0 + TEN, "bf")
    assert done.ran == [] and done.existing == [T0 + TEN]
    assert (occurrences("s"), works()) == before


def test_backfill__an_instant_an_earlier_generation_backfilled_is_existing(clock, target):
    create("s", schedules.Every(TEN, anchor=T0 - 2 * HOUR), target, overlap="allow_all")
    clock.set(T0 + HOUR)
    first = schedules.backfill(SCOPE, "s", T0 - HOUR, T0 - 40 * MINUTE, "bf-1")
    assert len(first.ran) == 3
    _payload_update()
    second = schedules.backfill(SCOPE, "s", T0 - HOUR, T0 - 30 * MINUTE, "bf-2")
    assert [t for t, _ in second.ran] == [T0 - 30 * MINUTE]
    assert second.existing == [T0 - HOUR, T0 - 50 * MINUTE, T0 - 40 * MINUTE]
    assert len(works()) == 4


def test_backfill__rerun_earlier_generations_runs_them_again_on_request(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="allow_all")
    run_pass(clock, T0 + TEN + MINUTE)
    clock.set(T0 + 2 * TEN - MINUTE)
    _payload_update()
    done = schedules.backfill(SCOPE, "s", T0 + TEN, T0 + TEN, "bf",
                              rerun_earlier_generations=True)
    assert [t for t, _ in done.ran] == [T0 + TEN] and done.existing == []
    assert [(o[0], o[1]) for o in occurrences("s")] == [(1, "nominal"), (2, "recovery")]
    assert len(works()) == 2
    again = schedules.backfill(SCOPE, "s", T0 + TEN, T0 + TEN, "bf-again",
                               rerun_earlier_generations=True)
    assert again.ran == [] and again.existing == [T0 + TEN]  # never twice in one generation
    assert len(works()) == 2


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_backfill__rerun_earlier_generations_takes_a_bool_only(clock, target, bad):
    create("s", schedules.Every(TEN, anchor=T0), target, overlap="allow_all")
    run_pass(clock, T0 + TEN + MINUTE)
    before = (occurrences("s"), works())
    with pytest.raises(InvalidArgument) as caught:
        schedules.backfill(SCOPE, "s", T0 + TEN, T0 + TEN, "bf", rerun_earlier_generations=bad)
    assert caught.value.code == "DS406"
    assert (occurrences("s"), works()) == before


def _past_skip_schedule(clock, target):
    create("s", schedules.Every(TEN, anchor=T0 - 2 * HOUR), target, overlap="skip")
    clock.set(T0 + HOUR)


def test_backfill__an_instant_an_earlier_skip_backfill_dropped_runs_on_a_later_backfill(
        clock, target):
    from tests.schedules.conftest import set_work_state
    _past_skip_schedule(clock, target)
    first = schedules.backfill(SCOPE, "s", T0 - 30 * MINUTE, T0 - 10 * MINUTE, "bf-1")
    assert first.skipped == [T0 - 20 * MINUTE, T0 - 10 * MINUTE]
    assert set_work_state(first.ran[0][1], "succeeded") == 1
    # The dropped 00:40 never ran: it is not "existing", a later backfill runs it.
    second = schedules.backfill(SCOPE, "s", T0 - 20 * MINUTE, T0 - 10 * MINUTE, "bf-2")
    assert [t for t, _ in second.ran] == [T0 - 20 * MINUTE]
    assert second.skipped == [T0 - 10 * MINUTE] and second.existing == []
    assert [o[4] for o in occurrences("s")] == ["materialized", "materialized", "skipped"]
    assert len(works()) == 2
    # The instant skipped twice is one skipped occurrence and counted once.
    assert schedules.get(SCOPE, "s").missed == {"overlap": 2}
    assert set_work_state(second.ran[0][1], "succeeded") == 1
    third = schedules.backfill(SCOPE, "s", T0 - 30 * MINUTE, T0 - 10 * MINUTE, "bf-3")
    assert [t for t, _ in third.ran] == [T0 - 10 * MINUTE]
    assert third.existing == [T0 - 30 * MINUTE, T0 - 20 * MINUTE] and third.skipped == []
    assert [o[4] for o in occurrences("s")] == ["materialized"] * 3
    assert len(works()) == 3


def test_backfill__a_cron_range_past_the_count_limit_says_at_least(clock, target):
    from durable_schedule.errors import BackfillRefused
    create("c", schedules.Cron("* * * * * *"), target, overlap="allow_all")
    clock.set(T0 + 400 * 24 * HOUR)
    before = (occurrences("c"), works())
    with pytest.raises(BackfillRefused) as caught:
        schedules.backfill(SCOPE, "c", T0 - 300 * 24 * HOUR, T0, "bf")
    assert caught.value.code == "DS153"
    assert "holds at least 10000 instants" in str(caught.value)
    assert caught.value.context["count_exact"] is False
    assert (occurrences("c"), works()) == before


def test_backfill__the_first_instant_of_a_misfire_skipped_range_runs(clock, target):
    create("s", schedules.Every(TEN, anchor=T0), target, misfire="skip", overlap="allow_all")
    run_pass(clock, T0 + 5 * TEN + MINUTE)   # 00:10-00:50 missed: one skipped range
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")] == [
        ("recovery", T0 + TEN, T0 + 5 * TEN, "skipped")]
    middle = schedules.backfill(SCOPE, "s", T0 + 3 * TEN, T0 + 3 * TEN, "bf-middle")
    assert [t for t, _ in middle.ran] == [T0 + 3 * TEN]
    # The range's first instant is the skipped occurrence's own identity: it runs all the same
    # (it was a TypeError), and the rest of the range stays recorded as skipped.
    first = schedules.backfill(SCOPE, "s", T0 + TEN, T0 + TEN, "bf-first")
    assert [t for t, _ in first.ran] == [T0 + TEN] and first.existing == []
    event, _actor, detail = history("s")[-1]
    assert (event, detail["revived"]) == ("backfilled", ["2030-01-01T12:10:00.000000+00:00"])
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")] == [
        ("recovery", T0 + TEN, T0 + TEN, "materialized"),
        ("recovery", T0 + 2 * TEN, T0 + 5 * TEN, "skipped"),
        ("recovery", T0 + 3 * TEN, T0 + 3 * TEN, "materialized")]
    assert len(works()) == 2
    assert schedules.get(SCOPE, "s").missed == {"misfire": 5}  # the skip happened: counted
    again = schedules.backfill(SCOPE, "s", T0 + TEN, T0 + 3 * TEN, "bf-again")
    assert [t for t, _ in again.ran] == [T0 + 2 * TEN]  # the new remainder's first runs too
    assert again.existing == [T0 + TEN, T0 + 3 * TEN]
    assert [(o[2], o[3], o[4]) for o in occurrences("s")] == [
        (T0 + TEN, T0 + TEN, "materialized"),
        (T0 + 2 * TEN, T0 + 2 * TEN, "materialized"),
        (T0 + 3 * TEN, T0 + 3 * TEN, "materialized"),
        (T0 + 4 * TEN, T0 + 5 * TEN, "skipped")]   # 00:30 had its own row: the rest from 00:40
    assert len(works()) == 3
