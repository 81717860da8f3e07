"""Run now (issue 14 item 3): ``trigger`` creates a ``manual`` occurrence whose identity comes
from the request id (the same request id: the same occurrence and Work), obeys the overlap
policy, and never moves the cursor."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidIdentifier, ScheduleNotTriggerable, TriggerSlotBusy
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    history,
    occurrences,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def test_trigger__twice_with_one_request_id_is_one_work(clock, target):
    create("s", schedules.Every(TEN), target)
    clock.set(T0 + MINUTE)
    first = schedules.trigger(SCOPE, "s", "deploy-42", actor="alice")
    second = schedules.trigger(SCOPE, "s", "deploy-42", actor="bob")
    assert first.created and not second.created
    assert first.work_id == second.work_id and first.work_id is not None
    assert [w[0] for w in works()] == [first.work_id]
    [(_, kind, at, _, state, work_id)] = occurrences("s")
    assert (kind, at, state, work_id) == ("manual", T0 + MINUTE, "materialized", first.work_id)
    assert definition("s")["cursor_utc"] == T0  # the cursor did not move
    event, actor, detail = history("s")[-1]
    assert (event, actor, detail["request_id"]) == ("triggered", "alice", "deploy-42")


def test_trigger__holds_the_slot_so_the_next_instant_coalesces_behind_it(clock, target):
    create("s", schedules.Every(TEN), target)  # queue_one
    clock.set(T0 + MINUTE)
    run = schedules.trigger(SCOPE, "s", "r1")
    run_pass(clock, T0 + TEN)
    assert [o[1] for o in occurrences("s")] == ["manual", "coalesced"]
    set_work_state(run.work_id, "succeeded")
    run_pass(clock, T0 + TEN + MINUTE)
    assert [(o[1], o[4]) for o in occurrences("s")] == [("manual", "materialized"),
                                                       ("coalesced", "materialized")]


def test_trigger__refused_while_the_slot_is_held_under_queue_one_and_skip(clock, target):
    for overlap in ("queue_one", "skip"):
        create(overlap, schedules.Every(TEN), target, overlap=overlap)
        run_pass(clock, T0 + TEN)
        before = (occurrences(overlap), len(works()))
        with pytest.raises(TriggerSlotBusy) as err:
            schedules.trigger(SCOPE, overlap, "r1")
        assert err.value.code == "DS150"
        assert (occurrences(overlap), len(works())) == before  # nothing written
        clock.set(T0)


def test_trigger__allow_all_runs_beside_the_running_work(clock, target):
    create("s", schedules.Every(TEN), target, overlap="allow_all")
    run_pass(clock, T0 + TEN)
    run = schedules.trigger(SCOPE, "s", "r1")
    assert run.created and len(works()) == 2


def test_trigger__two_request_ids_in_one_transaction_get_distinct_identities(clock, target):
    from django.db import transaction

    create("s", schedules.Every(TEN), target, overlap="allow_all")
    with transaction.atomic():
        a = schedules.trigger(SCOPE, "s", "a")
        b = schedules.trigger(SCOPE, "s", "b")
    assert a.work_id != b.work_id
    assert b.occurrence_first_utc > a.occurrence_first_utc


def test_trigger__a_paused_schedule_runs_now_and_stays_paused(clock, target):
    create("s", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "s", "x")
    run = schedules.trigger(SCOPE, "s", "r1")
    assert run.created and run.schedule.state == "paused"


def test_trigger__refuses_a_suspended_schedule_and_bad_request_ids(clock, target):
    create("s", schedules.Every(TEN), target)
    with pytest.raises(InvalidIdentifier):
        schedules.trigger(SCOPE, "s", " padded ")
    schedules.suspend(SCOPE, "s", "broken")
    with pytest.raises(ScheduleNotTriggerable):
        schedules.trigger(SCOPE, "s", "r1")
    assert occurrences("s") == [] and works() == []
