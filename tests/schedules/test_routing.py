"""Scheduled Work keeps its target's queue and priority (docs/work.md "Queues and priorities",
docs/schedules.md "Targets"): ``definition.target(..., queue=..., priority=...)`` stores them in
the snapshot, and every bridge -- one schedule alone, a batch in one pipeline or statement by
statement, prepared or not, a run-now -- accepts the occurrence's Work there. A target without
routing stores exactly the JSON it stored before routing existed."""

from __future__ import annotations

import json

import pytest
from demo import schedule_targets

from durable_schedule import schedules, work
from durable_schedule.errors import InvalidArgument, InvalidIdentifier, InvalidQueue
from durable_schedule.processor import batch as batch_module
from durable_schedule.processor import batch_work
from durable_schedule.store.models import Work
from tests.schedules.conftest import MINUTE, SCOPE, T0, TEN, create, rows, run_pass, set_work_state

pytestmark = pytest.mark.django_db

#: The stored form of a default target, written out: the keys and values every generation
#: stored before targets carried routing.
DEFAULT_JSON = {"schema": "durable_schedule.work.target.v1", "work_name": "schedules.test.report",
                "work_version": "v1", "payload": {"report": "nightly"},
                "provider_safety": "idempotent", "policy": None, "deadline_after_us": None}


def routed_target(queue="emails", priority=10):
    return schedule_targets.report.target(payload={"report": "nightly"}, queue=queue,
                                          priority=priority)


def work_routing() -> list[tuple]:
    """(queue, priority) of every Work and of its dispatch row, in insertion order."""
    return rows("select w.queue_name, w.priority, d.queue_name, d.priority from durable_work w"
                " join durable_work_dispatch d on d.work_ref = w.id order by w.id")


# ------------------------------------------------------------------ the snapshot
def test_target__a_default_target_stores_the_json_it_stored_before():
    plain = schedule_targets.report.target(payload={"report": "nightly"})
    explicit = routed_target(queue="default", priority=0)
    assert plain.to_json() == DEFAULT_JSON == explicit.to_json()
    assert json.dumps(plain.to_json(), sort_keys=True) == json.dumps(DEFAULT_JSON, sort_keys=True)
    assert plain == explicit and hash(plain) == hash(explicit)


def test_target__routing_round_trips_and_an_old_snapshot_reads_as_the_default():
    target = routed_target(queue="emails", priority=-7)
    stored = json.loads(json.dumps(target.to_json()))
    assert (stored["queue"], stored["priority"]) == ("emails", -7)
    again = work.WorkTarget.from_json(stored)
    assert again == target and (again.queue, again.priority) == ("emails", -7)
    only_priority = routed_target(queue="default", priority=3).to_json()
    assert "queue" not in only_priority and only_priority["priority"] == 3
    old = work.WorkTarget.from_json(dict(DEFAULT_JSON))  # a generation stored before routing
    assert (old.queue, old.priority) == ("default", 0)
    request = again.to_request(command_id="c", idempotency_key="k", work_id=None)
    assert (request.queue, request.priority) == ("emails", -7)
    # Routing is not identity: the Work's fingerprint is the unrouted target's.
    unrouted = old.to_request(command_id="c", idempotency_key="k", work_id=None)
    assert request.fingerprint == unrouted.fingerprint


@pytest.mark.parametrize(("routing", "error", "code"), [
    ({"queue": ""}, InvalidIdentifier, "DS115"),
    ({"queue": " emails"}, InvalidIdentifier, "DS115"),
    ({"queue": 5}, InvalidIdentifier, "DS115"),
    ({"priority": 101}, InvalidArgument, "DS406"),
    ({"priority": -101}, InvalidArgument, "DS406"),
    ({"priority": True}, InvalidArgument, "DS406"),
    ({"priority": "5"}, InvalidArgument, "DS406"),
    ({"priority": 1.0}, InvalidArgument, "DS406"),
])
def test_target__a_bad_queue_or_priority_is_refused_with_enqueues_code(routing, error, code):
    with pytest.raises(error) as caught:
        schedule_targets.report.target(payload={}, **routing)
    assert caught.value.code == code
    stored = {**DEFAULT_JSON, **routing}
    with pytest.raises(error):
        work.WorkTarget.from_json(stored)  # a tampered stored snapshot: the same refusal


def test_queues_setting__an_unlisted_queue_is_refused_and_nothing_is_stored(clock, settings):
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["emails"]}
    with pytest.raises(InvalidQueue) as caught:
        routed_target(queue="reports")
    assert caught.value.code == "DS244"
    # Built without definition.target(): schedules.create applies the same rule.
    direct = work.WorkTarget("schedules.test.report", "v1", {}, "idempotent", None,
                             queue="reports")
    with pytest.raises(InvalidQueue):
        create("unlisted", schedules.Every(TEN), direct)
    assert rows("select count(*) from durable_schedule_definition")[0][0] == 0
    create("listed", schedules.Every(TEN), routed_target(queue="emails"))
    create("default", schedules.Every(TEN), routed_target(queue="default", priority=5))


def test_create__the_generation_stores_the_routing_and_a_default_target_unchanged(clock):
    create("routed", schedules.Every(TEN), routed_target())
    create("plain", schedules.Every(TEN), schedule_targets.report.target(
        payload={"report": "nightly"}))
    stored = dict(rows("select schedule_id, target::text from durable_schedule_generation"))
    assert json.loads(stored["plain"]) == DEFAULT_JSON
    assert json.loads(stored["routed"]) == {**DEFAULT_JSON, "queue": "emails", "priority": 10}
    info = schedules.get(SCOPE, "routed")
    assert (info.target.queue, info.target.priority) == ("emails", 10)


# ------------------------------------------------------------------ the bridges
@pytest.fixture
def batch_sends(monkeypatch):
    """How many times the batched statement ("bridge occurrences") was sent."""
    sent = []
    original = batch_work.WorkBatch.send

    def send(self):
        sent.append(len(self._pending))
        return original(self)

    monkeypatch.setattr(batch_work.WorkBatch, "send", send)
    return sent


@pytest.mark.parametrize("path", ["alone", "batch-pipelined", "batch-statements",
                                  "batch-unprepared"])
def test_pass__scheduled_work_lands_on_the_targets_queue_and_priority(
        clock, settings, monkeypatch, batch_sends, path):
    if path == "batch-statements":  # no pipeline: one statement after the other
        monkeypatch.setattr(batch_module, "pipeline_connection", lambda cur: None)
    if path == "batch-unprepared":
        settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "PREPARE_STATEMENTS": False}
    create("emails", schedules.Every(TEN), routed_target("emails", 10))
    create("urgent", schedules.Every(TEN), routed_target("default", 50))
    create("plain", schedules.Every(TEN), schedule_targets.report.target(payload={"n": 1}))
    counts = run_pass(clock, T0 + TEN, batch_size=1 if path == "alone" else 10)
    assert counts.materialized == 3
    assert bool(batch_sends) is (path != "alone")  # the path named is the one taken
    got = rows("select o.schedule_id, w.queue_name, w.priority, d.queue_name, d.priority"
               " from durable_work w join durable_work_dispatch d on d.work_ref = w.id"
               " join durable_schedule_occurrence o on o.id = w.source_occurrence_id"
               " order by o.schedule_id")
    assert got == [("emails", "emails", 10, "emails", 10), ("plain", "default", 0, "default", 0),
                   ("urgent", "default", 50, "default", 50)]


def test_trigger__a_run_now_is_routed_like_the_schedules_own_occurrences(clock):
    create("s", schedules.Every(TEN), routed_target("emails", -20))
    clock.set(T0 + MINUTE)
    run = schedules.trigger(SCOPE, "s", "deploy-1")
    assert list(Work.objects.filter(work_id=run.work_id).values_list(
        "queue_name", "priority")) == [("emails", -20)]
    assert work_routing() == [("emails", -20, "emails", -20)]


def test_backfill__back_filled_work_is_routed_like_the_schedules_own_occurrences(clock):
    create("s", schedules.Every(TEN, anchor=T0 - 2 * TEN), routed_target("emails", 30),
           overlap="allow_all")
    clock.set(T0 + MINUTE)
    done = schedules.backfill(SCOPE, "s", T0 - 2 * TEN, T0 - TEN, "bf-1")
    assert len(done.ran) == 2
    assert work_routing() == [("emails", 30, "emails", 30)] * 2


def test_update__a_new_routing_is_a_new_generation_and_routes_the_next_work(clock):
    create("s", schedules.Every(TEN), routed_target("emails", 10))
    run_pass(clock, T0 + TEN)
    schedules.update(SCOPE, "s", expected_revision=schedules.get(SCOPE, "s").revision,
                     target=routed_target("default", 1))
    assert schedules.get(SCOPE, "s").generation == 2
    set_work_state(Work.objects.get().work_id, "succeeded")  # queue_one: free the slot
    run_pass(clock, T0 + 2 * TEN)
    # The first Work keeps the routing it was accepted with (a fact of its acceptance).
    assert [r[:2] for r in work_routing()] == [("emails", 10), ("default", 1)]


def test_queues_setting__a_queue_dropped_later_holds_the_schedule_until_it_is_listed_again(
        clock, settings):
    create("s", schedules.Every(TEN), routed_target("emails", 10))
    before = rows("select cursor_utc from durable_schedule_definition")
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}
    # Held (DS244), not a failure of the pass (docs/operations.md "Held schedules").
    counts = run_pass(clock, T0 + TEN)
    assert (counts.claimed, counts.held, counts.materialized) == (1, 1, 0)
    assert counts.outcomes[0].detail["code"] == "DS244"
    # Nothing materialized, the cursor did not move: nothing of the occurrence is lost.
    assert rows("select count(*) from durable_schedule_occurrence") == [(0,)]
    assert rows("select cursor_utc from durable_schedule_definition") == before
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports", "emails"]}
    # Looked at again one lease duration (30 s by default) after the held pass.
    assert run_pass(clock, T0 + TEN + MINUTE).materialized == 1
    assert work_routing() == [("emails", 10, "emails", 10)]
