"""Routed scheduled Work on every path that accepts or looks up a schedule's Work
(docs/work.md "Queues and priorities", docs/schedules.md "Overlap policies", "Lifecycle"):
the slot of every overlap policy is held by routed Work as by default-queue Work; coalesced,
buffered and recovery occurrences are routed like nominal ones; an update supersedes an older
generation's pending occurrence (docs/protocol/schedules.md S5) and routes only what the new
generation accepts; an enqueue of a scheduled Work's request identity gets the answer it got
before routing existed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from durable_schedule.errors import IdempotencyConflict, InvalidQueue, TriggerSlotBusy
from durable_schedule.operations.status import collect
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.schedules.conftest import (
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    leave_transaction_forms,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db
TERMINAL = ("succeeded", "failed", "expired", "canceled")
PATHS = pytest.mark.parametrize("batch_size", [1, 10], ids=["alone", "batch"])


def routed(queue="emails", priority=10, report="nightly"):
    return schedule_targets.report.target(payload={"report": report}, queue=queue,
                                          priority=priority)


def routing() -> list[tuple]:
    """(occurrence kind, Work queue, Work priority, dispatch queue, dispatch priority) of every
    Work, in the order it was accepted."""
    return rows("select o.kind, w.queue_name, w.priority, d.queue_name, d.priority"
                " from durable_work w join durable_work_dispatch d on d.work_ref = w.id"
                " join durable_schedule_occurrence o on o.scope_id = w.scope_id"
                " and o.id = w.source_occurrence_id order by w.id")


def finish_running() -> None:
    [work_id] = [w[0] for w in works() if w[1] not in TERMINAL]
    set_work_state(work_id, "succeeded")


def at(minutes: int):
    return T0 + timedelta(minutes=minutes)


# ------------------------------------------------------------------ queue_one
@PATHS
def test_queue_one__routed_work_holds_the_slot_and_the_coalesced_occurrence_is_routed(
        clock, batch_size):
    create("s", schedules.Every(TEN), routed())
    run_pass(clock, at(10), batch_size=batch_size)
    # The routed Work is nonterminal: the next instants coalesce instead of running.
    assert run_pass(clock, at(20), batch_size=batch_size).coalesced == 1
    assert run_pass(clock, at(30), batch_size=batch_size).coalesced == 1
    assert len(works()) == 1
    clock.set(at(35))
    finish_running()
    assert run_pass(clock, at(35), batch_size=batch_size).materialized == 1
    assert routing() == [("nominal", "emails", 10, "emails", 10),
                         ("coalesced", "emails", 10, "emails", 10)]


@PATHS
def test_update__routing_only_supersedes_the_pending_occurrence_and_routes_the_new_generation(
        clock, batch_size):
    create("s", schedules.Every(TEN), routed("emails", 10))
    run_pass(clock, at(10), batch_size=batch_size)
    run_pass(clock, at(20), batch_size=batch_size)  # coalesced, pending in generation 1
    info = schedules.get(SCOPE, "s")
    schedules.update(SCOPE, "s", expected_revision=info.revision, target=routed("reports", -5))
    after = schedules.get(SCOPE, "s")
    assert after.generation == 2 and after.spec_json == info.spec_json
    assert (after.target.queue, after.target.priority) == ("reports", -5)
    # S5: the older generation's unstarted occurrence is superseded, not run under new routing.
    assert [(o[0], o[1], o[4]) for o in occurrences("s")] == [
        (1, "nominal", "materialized"), (1, "coalesced", "superseded")]
    # The generation 1 Work still holds the slot (any generation): generation 2's instant
    # coalesces; once it ends, that occurrence runs with generation 2's routing.
    assert run_pass(clock, at(30), batch_size=batch_size).coalesced == 1
    clock.set(at(33))
    finish_running()
    run_pass(clock, at(33), batch_size=batch_size)
    assert routing() == [("nominal", "emails", 10, "emails", 10),
                         ("coalesced", "reports", -5, "reports", -5)]


# ------------------------------------------------------------------ skip and buffer_all
@PATHS
def test_skip__routed_work_holds_the_slot(clock, batch_size):
    create("s", schedules.Every(TEN), routed(), overlap="skip")
    run_pass(clock, at(10), batch_size=batch_size)
    assert run_pass(clock, at(20), batch_size=batch_size).skipped == 1
    assert len(works()) == 1
    assert json.loads(definition("s")["missed"]) == {"overlap": 1}


def test_buffer_all__buffered_instants_wait_for_routed_work_and_run_routed(clock):
    create("s", schedules.Every(TEN), routed("emails", 20), overlap="buffer_all")
    run_pass(clock, at(10))
    run_pass(clock, at(20))
    run_pass(clock, at(30))
    assert len(works()) == 1  # both buffered behind the routed Work
    for minute in (35, 37):
        clock.set(at(minute))
        finish_running()
        run_pass(clock, at(minute))
    assert routing() == [("nominal", "emails", 20, "emails", 20)] * 3


# ------------------------------------------------------------------ recovery and run-now
@PATHS
def test_recovery__a_missed_range_runs_once_on_the_targets_queue(clock, batch_size):
    create("s", schedules.Every(TEN), routed("emails", -30), safety_window=timedelta(hours=2))
    counts = run_pass(clock, at(35), batch_size=batch_size)  # 12:10, 12:20, 12:30 missed
    assert counts.recovered == 1
    assert routing() == [("recovery", "emails", -30, "emails", -30)]


def test_trigger__a_run_now_while_routed_work_holds_the_slot_is_refused_like_before(clock):
    create("s", schedules.Every(TEN), routed())
    run_pass(clock, at(10))
    with pytest.raises(TriggerSlotBusy):
        schedules.trigger(SCOPE, "s", "deploy-1")
    assert len(works()) == 1


# ------------------------------------------------------------------ request identity
def test_enqueue__of_a_scheduled_works_identity_returns_it_with_its_routing(clock):
    create("s", schedules.Every(TEN), routed("emails", 10))
    run_pass(clock, at(10))
    [(work_id, _, _, command_id, key)] = works()
    identity = OccurrenceIdentity(SCOPE, "s", 1, "nominal", at(10))
    assert derive_link(identity).work_id == work_id
    # The same request (work id, identity, payload) enqueued on another queue and priority:
    # routing is not identity, so the scheduled Work is returned as it was accepted -- the
    # answer an enqueue of the default-routed request got before targets carried routing.
    for queue, priority in (("default", 0), ("reports", 99)):
        again = schedule_targets.report.enqueue(
            scope=SCOPE, command=command_id, idempotency_key=key,
            payload={"report": "nightly"}, work_id=work_id, queue=queue, priority=priority,
            policy=None)
        assert (again.work_id, again.created) == (work_id, False)
    assert routing() == [("nominal", "emails", 10, "emails", 10)]
    # Another payload under the same identity is a conflict, routed or not.
    with pytest.raises(IdempotencyConflict):
        schedule_targets.report.enqueue(
            scope=SCOPE, command=command_id, idempotency_key=key, payload={"report": "other"},
            work_id=work_id, queue="emails", priority=10, policy=None)


# ------------------------------------------------------------------ QUEUES narrowed later
def test_status__names_a_schedule_whose_queue_was_dropped_from_the_queues_setting(
        clock, settings):
    create("emails", schedules.Every(TEN), routed("emails"))
    create("reports", schedules.Every(TEN), routed("reports"))
    create("plain", schedules.Every(TEN), schedule_targets.report.target(payload={}))
    create("gone", schedules.Every(TEN), routed("emails"))
    schedules.delete(SCOPE, "gone")  # a deleted schedule waits for nothing
    assert unlisted_problems() == []  # QUEUES unset: every queue is accepted
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}
    report = collect()
    assert [(u.scope_id, u.schedule_id, u.queue) for u in report.unlisted_queue_schedules] == [
        (SCOPE, "emails", "emails")]
    assert unlisted_problems(report) == [
        f"schedule {SCOPE}/emails targets queue 'emails', which DURABLE_SCHEDULE['QUEUES'] "
        "does not list (DS244): its occurrences wait until the queue is listed again or the "
        "schedule is updated"]
    assert not report.healthy
    assert report.to_json()["unlisted_queue_schedules"] == [
        {"scope_id": SCOPE, "schedule_id": "emails", "queue": "emails"}]
    # A paused schedule would meet the refusal when resumed: named too. Listed again: healthy.
    schedules.pause(SCOPE, "emails")
    assert [u.schedule_id for u in collect().unlisted_queue_schedules] == ["emails"]
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports", "emails"]}
    assert unlisted_problems() == []


def unlisted_problems(report=None) -> list[str]:
    report = collect() if report is None else report
    leave_transaction_forms()
    return [p for p in report.problems if "DS244" in p]


# ------------------------------------------------------------------ repairs keep the routing
def test_reissue__a_suspended_routed_schedule_is_reissued_with_its_routing(clock):
    create("s", schedules.Every(TEN), routed("emails", 40))
    schedules.suspend(SCOPE, "s", "maintenance", actor="ops")
    assert run_pass(clock, at(10)).materialized == 0
    # The admin's re-issue and durable_tz_rules --apply: update() without a target.
    info = schedules.update(SCOPE, "s", expected_revision=schedules.get(SCOPE, "s").revision)
    assert (info.generation, info.state) == (2, "active")
    assert (info.target.queue, info.target.priority) == ("emails", 40)
    run_pass(clock, at(25))
    assert routing() == [("nominal", "emails", 40, "emails", 40)]


def test_update__of_the_spec_alone_keeps_the_routing(clock):
    create("s", schedules.Every(TEN), routed("emails", -1))
    schedules.update(SCOPE, "s", expected_revision=schedules.get(SCOPE, "s").revision,
                     spec=schedules.Every(2 * TEN))
    run_pass(clock, at(20))
    assert routing() == [("nominal", "emails", -1, "emails", -1)]


def test_queues_setting__a_dropped_queue_refuses_run_now_and_backfill_with_nothing_written(
        clock, settings):
    create("s", schedules.Every(TEN, anchor=T0 - 2 * TEN), routed("emails"),
           overlap="allow_all")
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}
    clock.set(at(1))
    with pytest.raises(InvalidQueue):
        schedules.trigger(SCOPE, "s", "deploy-1")
    leave_transaction_forms()
    with pytest.raises(InvalidQueue):
        schedules.backfill(SCOPE, "s", T0 - 2 * TEN, T0 - TEN, "bf-1")
    leave_transaction_forms()
    assert occurrences("s") == [] and works() == []
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports", "emails"]}
    assert schedules.trigger(SCOPE, "s", "deploy-1").created
    assert routing() == [("manual", "emails", 10, "emails", 10)]


def test_update__routing_only_supersedes_buffered_instants_of_the_older_generation(clock):
    create("s", schedules.Every(TEN), routed("emails", 20), overlap="buffer_all")
    for minute in (10, 20, 30):
        run_pass(clock, at(minute))
    info = schedules.get(SCOPE, "s")
    schedules.update(SCOPE, "s", expected_revision=info.revision, target=routed("reports", 1))
    assert [(o[0], o[4]) for o in occurrences("s")] == [
        (1, "materialized"), (1, "superseded"), (1, "superseded")]
    clock.set(at(35))
    finish_running()
    run_pass(clock, at(40))
    assert routing() == [("nominal", "emails", 20, "emails", 20),
                         ("nominal", "reports", 1, "reports", 1)]


def test_enqueue_many__of_a_scheduled_works_identity_returns_it_with_its_routing(clock):
    from durable_schedule import work

    create("s", schedules.Every(TEN), routed("emails", 10))
    run_pass(clock, at(10))
    [(work_id, _, _, command_id, key)] = works()

    def request(queue, priority, payload):
        return schedule_targets.report.request(
            command=command_id, idempotency_key=key, payload=payload, work_id=work_id,
            queue=queue, priority=priority, policy=None)

    # Two or more requests take enqueue_many's identity-arbiter statement (schema 16).
    fresh = schedule_targets.report.request(command="c", idempotency_key="fresh",
                                            payload={"report": "x"}, policy=None)
    got = work.enqueue_many(SCOPE, [request("default", 0, {"report": "nightly"}), fresh])
    assert (got[0].work_id, got[0].created) == (work_id, False) and got[1].created
    assert routing() == [("nominal", "emails", 10, "emails", 10)]
    with pytest.raises(IdempotencyConflict):
        work.enqueue_many(SCOPE, [request("emails", 10, {"report": "other"}), fresh])
