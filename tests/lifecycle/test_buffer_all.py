"""Overlap policy ``buffer_all`` (issue 14 item 6; Temporal's BUFFER_ALL): instants arriving while
the slot is held are buffered, each its own occurrence, and run one after another, oldest first,
each when the previous Work ends; the buffer is bounded per generation and an instant past the
bound is recorded skipped and counted (``missed.buffer_overflow``). Written out per instant on
the controlled clock, Temporal-style (docs/schedules.md "Overlap policies")."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import BackfillRefused, InvalidBufferLimit, TriggerSlotBusy
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.schedules.conftest import (
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db
TERMINAL = ("succeeded", "failed", "expired", "canceled")


def running() -> list:
    return [w[0] for w in works() if w[1] not in TERMINAL]


def finish_running() -> None:
    [work_id] = running()
    set_work_state(work_id, "succeeded")


def ran() -> list[tuple]:
    """(first nominal instant, kind) of each Work, in the order the Work was accepted."""
    return rows("select o.first_nominal_utc, o.kind from durable_work w"
                " join durable_schedule_occurrence o on o.scope_id = w.scope_id"
                " and o.id = w.source_occurrence_id where w.scope_id = %s order by w.id",
                (SCOPE,))


def buffered() -> list:
    return [o[2] for o in occurrences("s") if o[4] == "pending" and o[5] is None]


def at(minutes: int):
    return T0 + timedelta(minutes=minutes)


def test_buffer_all__instants_wait_and_run_in_order_each_after_the_previous(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    assert schedules.get(SCOPE, "s").buffer_limit == 100  # the default bound
    # 12:10 runs.
    run_pass(clock, at(10))
    assert ran() == [(at(10), "nominal")]
    # 12:20 and 12:30 arrive while it runs: buffered, nothing more runs.
    run_pass(clock, at(20))
    run_pass(clock, at(30))
    assert buffered() == [at(20), at(30)] and len(works()) == 1
    # 12:35 the 12:10 Work ends: the terminal-Work trigger makes the row due at once, and the
    # 12:20 one runs (not the newest, not both).
    clock.set(at(35))
    finish_running()
    assert dispatch("s")[0] == at(35)
    run_pass(clock, at(35))
    assert ran()[-1] == (at(20), "nominal") and buffered() == [at(30)]
    # 12:40 arrives while 12:20 runs: buffered behind 12:30.
    run_pass(clock, at(40))
    assert buffered() == [at(30), at(40)]
    # 12:42 the 12:20 Work ends: 12:30 runs; 12:44 it ends: 12:40 runs.
    clock.set(at(42))
    finish_running()
    run_pass(clock, at(42))
    clock.set(at(44))
    finish_running()
    run_pass(clock, at(44))
    assert buffered() == []
    # 12:50 with a free slot and an empty buffer runs at once, like any nominal instant.
    finish_running()
    run_pass(clock, at(50))
    assert ran() == [(at(m), "nominal") for m in (10, 20, 30, 40, 50)]
    # Each buffered instant kept its own identity: its Work id is the one it would have had
    # running at once (stable across retries and runners).
    for work_id, *_ in works()[1:4]:
        [(first,)] = rows("select first_nominal_utc from durable_schedule_occurrence"
                          " where work_id = %s", (work_id,))
        identity = OccurrenceIdentity(SCOPE, "s", 1, "nominal", first)
        assert derive_link(identity).work_id == work_id
    events = [h[0] for h in history("s")]
    assert events.count("buffered") == 3 and events.count("materialized") == 5
    assert json.loads(definition("s")["missed"]) == {}


def test_buffer_all__past_the_bound_an_instant_is_skipped_and_counted(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all", buffer_limit=2)
    run_pass(clock, at(10))  # runs
    for m in (20, 30, 40, 50):  # 20 and 30 fill the buffer; 40 and 50 overflow
        run_pass(clock, at(m))
    seq = [(o[1], o[2], o[4]) for o in occurrences("s")]
    assert seq == [("nominal", at(10), "materialized"), ("nominal", at(20), "pending"),
                   ("nominal", at(30), "pending"), ("recovery", at(40), "skipped"),
                   ("recovery", at(50), "skipped")]
    assert json.loads(definition("s")["missed"]) == {"buffer_overflow": 2}
    assert schedules.get(SCOPE, "s").missed == {"buffer_overflow": 2}
    assert [h[2].get("skip_cause") for h in history("s") if h[0] == "skipped"] == [
        "buffer_overflow", "buffer_overflow"]
    # The buffer drains in order; a freed place takes the next arriving instant again.
    clock.set(at(55))
    finish_running()
    run_pass(clock, at(55))  # 12:20 runs
    run_pass(clock, at(60))  # 13:00 joins the buffer behind 12:30
    assert buffered() == [at(30), at(60)]


def test_buffer_all__a_missed_range_is_one_buffered_recovery_occurrence(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(45))  # 12:20, 12:30, 12:40 missed together (run_once): one range
    [(kind, first, last)] = [(o[1], o[2], o[3]) for o in occurrences("s") if o[4] == "pending"]
    assert (kind, first, last) == ("recovery", at(20), at(40))
    finish_running()
    run_pass(clock, at(46))
    assert ran()[-1] == (at(20), "recovery")


def test_buffer_all__max_runs_counts_buffered_instants(clock, target):
    """A buffered instant will run, so it uses one of max_runs: the schedule never buffers more
    than it may run, and completes once the last buffered one ran."""
    create("s", schedules.Every(TEN), target, overlap="buffer_all", max_runs=3)
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    run_pass(clock, at(30))
    assert buffered() == [at(20), at(30)]
    assert definition("s")["state"] == "active"  # two runs still to come
    for m in (35, 40):
        clock.set(at(m))
        finish_running()
        run_pass(clock, at(m))
    assert ran() == [(at(10), "nominal"), (at(20), "nominal"), (at(30), "nominal")]
    assert definition("s")["state"] == "completed"


def test_buffer_all__the_batched_pass_leaves_it_to_the_single_step(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    create("q", schedules.Every(TEN), target)
    for m in (10, 20, 30):
        run_pass(clock, at(m), batch_size=10)
    assert buffered() == [at(20), at(30)]
    clock.set(at(35))
    for work_id, state, *_ in works():
        if state not in TERMINAL:
            set_work_state(work_id, "succeeded")
    run_pass(clock, at(35), batch_size=10)
    assert buffered() == [at(30)]
    assert at(20) in [first for first, _ in ran()]


def test_buffer_all__run_now_and_backfill_wait_for_the_buffer(clock, target):
    # The grid reaches back before the acceptance, so 11:30 and 11:40 are back-fillable
    # instants the schedule never ran (an instant it ran is never backfilled again).
    create("s", schedules.Every(TEN, anchor=at(-60)), target, overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    finish_running()  # the slot is free, 12:20 still waits to run first
    with pytest.raises(TriggerSlotBusy, match="buffered instants wait to run first"):
        schedules.trigger(SCOPE, "s", "run-now-1")
    with pytest.raises(TriggerSlotBusy):
        schedules.backfill(SCOPE, "s", at(-30), at(-30), "bf-1")
    run_pass(clock, at(21))  # 12:20 runs
    finish_running()
    triggered = schedules.trigger(SCOPE, "s", "run-now-2")
    assert triggered.created
    finish_running()
    # A backfill does not fill the buffer: like queue_one, one new instant per request.
    with pytest.raises(BackfillRefused):
        schedules.backfill(SCOPE, "s", at(-30), at(-20), "bf-2")
    assert schedules.backfill(SCOPE, "s", at(-30), at(-30), "bf-3").ran


def test_buffer_all__an_update_supersedes_the_buffer_and_keeps_the_bound(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all", buffer_limit=7)
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    info = schedules.get(SCOPE, "s")
    updated = schedules.update(SCOPE, "s", expected_revision=info.revision, misfire="skip")
    assert (updated.overlap, updated.buffer_limit) == ("buffer_all", 7)
    assert [o[4] for o in occurrences("s") if o[2] == at(20)] == ["superseded"]
    queued = schedules.update(SCOPE, "s", expected_revision=updated.revision,
                              overlap="queue_one")
    assert queued.buffer_limit is None


@pytest.mark.parametrize(("overlap", "limit"), [
    ("buffer_all", 0), ("buffer_all", 1001), ("buffer_all", "10"), ("buffer_all", True),
    ("queue_one", 10),
])
def test_buffer_limit__bad_values_are_refused_with_ds154_and_change_nothing(clock, target,
                                                                            overlap, limit):
    with pytest.raises(InvalidBufferLimit) as refused:
        create("s", schedules.Every(TEN), target, overlap=overlap, buffer_limit=limit)
    assert refused.value.code == "DS154"
    assert rows("select count(*) from durable_schedule_definition") == [(0,)]


def test_buffer_limit__an_update_refuses_a_bound_without_buffer_all(clock, target):
    info = create("s", schedules.Every(TEN), target)
    with pytest.raises(InvalidBufferLimit):
        schedules.update(SCOPE, "s", expected_revision=info.revision, buffer_limit=5)
    assert schedules.get(SCOPE, "s").generation == 1


def test_buffer_all__declared_and_synced_then_a_second_sync_is_a_no_op(clock, target):
    from durable_schedule.schedules import declared

    declared._DECLARED.clear()
    try:
        declared.declare("decl", schedules.Every(TEN), target=target, scope=SCOPE,
                         overlap="buffer_all", buffer_limit=5)
        first = declared.sync()
        second = declared.sync()
    finally:
        declared._DECLARED.clear()
    assert first.created == [(SCOPE, "decl")] and second.unchanged == [(SCOPE, "decl")]
    info = schedules.get(SCOPE, "decl")
    assert (info.overlap, info.buffer_limit) == ("buffer_all", 5)


def test_buffer_all__while_paused_nothing_runs_and_resume_continues_the_buffer(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    schedules.pause(SCOPE, "s", "maintenance")
    finish_running()
    run_pass(clock, at(25))
    assert buffered() == [at(20)] and len(works()) == 1
    schedules.resume(SCOPE, "s", catch_up="skip")
    run_pass(clock, at(26))
    assert ran()[-1] == (at(20), "nominal")


def test_durable_status__shows_the_buffered_instants(clock, target):
    from io import StringIO

    from django.core.management import call_command

    from durable_schedule.operations.status import collect

    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    for m in (10, 20, 30):
        run_pass(clock, at(m))
    report = collect()
    assert report.buffered_instants == 2 and report.to_json()["buffered_instants"] == 2
    out = StringIO()
    with pytest.raises(SystemExit):  # exit 1: no live runner here
        call_command("durable_status", stdout=out)
    assert "buffered     2 instants (buffer_all)\n" in out.getvalue()


def test_buffer_all__delete_cancels_the_buffer(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    for m in (10, 20, 30):
        run_pass(clock, at(m))
    schedules.delete(SCOPE, "s")
    assert [o[4] for o in occurrences("s")] == ["materialized", "canceled", "canceled"]
    finish_running()
    run_pass(clock, at(40))
    assert len(works()) == 1
