"""Adversarial review of overlap policy ``buffer_all`` (issue 14 item 6): the interplay the first
tests leave out -- every terminal Work outcome releases the next buffered instant, a retrying
Work does not, ``end_at`` and ``max_runs`` with instants still buffered, misfire ``skip``,
resume under the misfire policy, jitter of a buffered nominal occurrence, and a declaration
whose bound changes. Written out per instant on the controlled clock (docs/schedules.md
"Overlap policies")."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.evaluation import jitter as jittering
from tests.lifecycle.test_buffer_all import at, buffered, finish_running, ran, running
from tests.schedules.conftest import (
    SCOPE,
    TEN,
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


@pytest.mark.parametrize("outcome", ["failed", "canceled", "expired", "succeeded"])
def test_every_terminal_outcome_of_the_running_work_releases_the_next_buffered_instant(
        clock, target, outcome):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    clock.set(at(25))
    [work_id] = running()
    set_work_state(work_id, outcome)
    assert dispatch("s")[0] == at(25)  # due at once, not at the next nominal instant 12:30
    run_pass(clock, at(25))
    assert ran()[-1] == (at(20), "nominal") and buffered() == []


@pytest.mark.parametrize("nonterminal", ["pending", "suspended"])
def test_a_retrying_or_suspended_work_keeps_the_slot_and_releases_nothing(clock, target,
                                                                          nonterminal):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    [work_id] = running()
    set_work_state(work_id, "running")
    due = dispatch("s")[0]
    clock.set(at(25))
    set_work_state(work_id, nonterminal)  # a retry waits as pending; suspension holds the slot
    assert dispatch("s")[0] == due == at(30)
    run_pass(clock, at(25))
    assert len(works()) == 1 and buffered() == [at(20)]


def test_instants_buffered_before_end_at_still_run_after_it_and_then_the_schedule_completes(
        clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all", end_at=at(30))
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    run_pass(clock, at(30))
    run_pass(clock, at(40))  # past end_at: no instant exists, the buffer keeps 12:20 and 12:30
    assert buffered() == [at(20), at(30)]
    assert definition("s")["state"] == "active"
    for m in (45, 50):
        clock.set(at(m))
        finish_running()
        run_pass(clock, at(m))
    assert ran() == [(at(10), "nominal"), (at(20), "nominal"), (at(30), "nominal")]
    assert definition("s")["state"] == "completed"
    assert dispatch("s")[0] is None


def test_max_runs_used_up_by_the_buffer_stops_buffering_without_counting_overflow(clock,
                                                                                  target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all", max_runs=2, buffer_limit=5)
    run_pass(clock, at(10))
    run_pass(clock, at(20))  # the second and last run: buffered
    run_pass(clock, at(30))
    run_pass(clock, at(40))
    assert buffered() == [at(20)]
    assert [o[2] for o in occurrences("s")] == [at(10), at(20)]  # no skipped row past max_runs
    assert json.loads(definition("s")["missed"]) == {}
    clock.set(at(45))
    finish_running()
    run_pass(clock, at(45))
    assert [first for first, _ in ran()] == [at(10), at(20)]
    assert definition("s")["state"] == "completed"


def test_misfire_skip_of_a_missed_range_is_counted_as_misfire_not_buffered(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all", misfire="skip")
    run_pass(clock, at(10))
    run_pass(clock, at(45))  # 12:20, 12:30, 12:40 missed together while 12:10 runs
    assert buffered() == []
    assert json.loads(definition("s")["missed"]) == {"misfire": 3}
    run_pass(clock, at(50))  # one instant, slot held: buffered
    assert buffered() == [at(50)]


def test_an_overflowing_missed_range_counts_each_of_its_instants(clock, target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all", buffer_limit=1)
    run_pass(clock, at(10))
    run_pass(clock, at(20))  # fills the buffer
    run_pass(clock, at(55))  # 12:30, 12:40, 12:50 as one range: the buffer is full
    assert buffered() == [at(20)]
    assert json.loads(definition("s")["missed"]) == {"buffer_overflow": 3}


def test_resume_under_the_misfire_policy_buffers_the_paused_range_behind_the_buffer(clock,
                                                                                    target):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    schedules.pause(SCOPE, "s", "maintenance")
    clock.set(at(45))
    schedules.resume(SCOPE, "s")  # catch_up="misfire_policy": run_once, one recovery range
    run_pass(clock, at(45))
    pending = [(o[1], o[2], o[3]) for o in occurrences("s") if o[4] == "pending"]
    assert pending == [("nominal", at(20), at(20)), ("recovery", at(30), at(40))]
    for m in (46, 47):
        clock.set(at(m))
        finish_running()
        run_pass(clock, at(m))
    assert ran() == [(at(10), "nominal"), (at(20), "nominal"), (at(30), "recovery")]


def test_a_buffered_nominal_occurrence_keeps_its_jitter_offset_and_runs_when_released(
        clock, target):
    jitter = timedelta(minutes=3)
    create("s", schedules.Every(TEN), target, overlap="buffer_all", jitter=jitter)
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    [(offset,)] = rows("select jitter_us from durable_schedule_occurrence"
                       " where first_nominal_utc = %s", (at(20),))
    assert offset == jittering.offset_us(jitter, SCOPE, "s", 1, "nominal", at(20))
    clock.set(at(35))
    finish_running()
    run_pass(clock, at(35))
    [(due,)] = rows("select w.due_at from durable_work w join durable_schedule_occurrence o"
                    " on o.scope_id = w.scope_id and o.id = w.source_occurrence_id"
                    " where o.first_nominal_utc = %s", (at(20),))
    # Its nominal identity and offset did not move; the due time lies in the past: runs now.
    assert due == at(20) + timedelta(microseconds=offset) <= at(35)


def test_a_declaration_whose_bound_changes_issues_one_new_generation(clock, target):
    from durable_schedule.schedules import declared

    declared._DECLARED.clear()
    try:
        declared.declare("decl", schedules.Every(TEN), target=target, scope=SCOPE,
                         overlap="buffer_all", buffer_limit=5)
        declared.sync()
        declared._DECLARED.clear()
        declared.declare("decl", schedules.Every(TEN), target=target, scope=SCOPE,
                         overlap="buffer_all", buffer_limit=9)
        changed = declared.sync()
        again = declared.sync()
        declared._DECLARED.clear()
        declared.declare("decl", schedules.Every(TEN), target=target, scope=SCOPE,
                         overlap="buffer_all")
        default = declared.sync()
    finally:
        declared._DECLARED.clear()
    assert changed.updated == [(SCOPE, "decl", ["buffer_limit"])]
    assert again.unchanged == [(SCOPE, "decl")]
    assert default.updated == [(SCOPE, "decl", ["buffer_limit"])]  # back to the default 100
    info = schedules.get(SCOPE, "decl")
    assert (info.generation, info.buffer_limit) == (3, 100)
