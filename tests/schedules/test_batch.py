"""The batched pass (docs/architecture.md "One batched pass"): the claimed schedules of one scope
in one transaction with multi-row statements decide, move their cursors and link their Work
exactly as one transaction per schedule does; a schedule that fails costs the others of its
batch nothing; a lease lost before the batch locks its rows fences exactly those rows; the
statements of a batch do not grow with its size."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import schedules
from durable_schedule.errors import IdempotencyConflict, OccurrenceLinkConflict
from durable_schedule.processor import batch as batch_module
from durable_schedule.processor import evaluate as evaluate_module
from durable_schedule.processor import process_due
from durable_schedule.processor.batch import process_batch
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    OWNER,
    SCOPE,
    SECOND,
    T0,
    TEN,
    at,
    create,
    definition,
    dispatch,
    leave_transaction_forms,
    occurrences,
    process,
    rows,
    run_pass,
    set_work_state,
    take_claims,
    works,
)

pytestmark = pytest.mark.django_db

ALONE, BATCH = "eq-alone", "eq-batch"


def batch(claims, owner: str = OWNER):
    try:
        return process_batch(claims, owner)
    finally:
        leave_transaction_forms()


# ------------------------------------------------------------------ equivalence
def _scrub(value):
    """History details without the values that differ between two scopes by construction
    (Work ids and idempotency keys derive from the scope)."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()
                if k not in ("work_id", "idempotency_key", "slot_work_id")}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def snapshot(scope: str) -> dict:
    """Everything a pass writes in ``scope``, comparable across scopes."""
    return {
        "definitions": rows(
            "select schedule_id, state, revision, cursor_utc, suspension_reason,"
            " suspension_evidence::text, suspended_at, updated_at"
            " from durable_schedule_definition where scope_id = %s order by schedule_id",
            (scope,)),
        "occurrences": rows(
            "select schedule_id, generation, kind, first_nominal_utc, last_nominal_utc, state,"
            " work_command, work_id is not null, created_at, updated_at"
            " from durable_schedule_occurrence where scope_id = %s"
            " order by schedule_id, first_nominal_utc, kind", (scope,)),
        "dispatch": rows(
            "select d.schedule_id, d.due_at, d.lease_owner, d.dispatch_revision"
            " from durable_schedule_dispatch d join durable_schedule_scope s"
            " on s.routing_id = d.scope_routing_id where s.scope_id = %s"
            " order by d.schedule_id", (scope,)),
        "history": [(s, e, a, _scrub(json.loads(d)), r) for s, e, a, d, r in rows(
            "select schedule_id, event, actor, detail::text, recorded_at"
            " from durable_schedule_history where scope_id = %s"
            " and actor like 'processor:%%' order by schedule_id, id", (scope,))],
        "work": rows(
            "select w.command_id, w.work_name, w.work_version, w.payload::text,"
            " w.provider_safety, w.fingerprint_schema, w.fingerprint_digest,"
            " w.retry_policy::text, w.attempt_plan::text, w.execution_deadline, w.accepted_at,"
            " w.due_at, w.accepted_due_at, w.state, o.schedule_id, o.kind, o.first_nominal_utc,"
            " w.work_id = o.work_id, w.idempotency_key = 'occurrence:' || w.work_id::text"
            " from durable_work w join durable_schedule_occurrence o"
            " on o.scope_id = w.scope_id and o.id = w.source_occurrence_id"
            " where w.scope_id = %s order by w.command_id", (scope,)),
        "work_dispatch": rows(
            "select w.command_id, d.due_at, d.lease_owner from durable_work_dispatch d"
            " join durable_work w on w.id = d.work_ref where w.scope_id = %s"
            " order by w.command_id", (scope,)),
        "work_history": [(c, e, a, _scrub({k: v for k, v in json.loads(d).items()
                                           if k != "source_occurrence_id"}), r)
                         for c, e, a, d, r in rows(
            "select w.command_id, h.event, h.actor, h.detail::text, h.recorded_at"
            " from durable_work_history h join durable_work w"
            " on w.scope_id = h.scope_id and w.work_id = h.work_id"
            " where h.scope_id = %s order by w.command_id, h.id", (scope,))],
    }


def latest_work(scope: str, schedule_id: str):
    return rows("select work_id from durable_schedule_occurrence where scope_id = %s and"
                " schedule_id = %s and work_id is not null order by id desc limit 1",
                (scope, schedule_id))[0][0]


def both(fn) -> None:
    for scope in (ALONE, BATCH):
        fn(scope)


#: [requested, active]: the ALONE scope's passes decide through decide() only (no plain Every
#: path), so the equivalence below also holds between the two decision paths.
_GENERAL_ALONE = [False, False]


@pytest.fixture(params=["same path", "general path alone"])
def decision_paths(request, monkeypatch):
    fast = evaluate_module.decide_every

    def maybe(*args, **kwargs):
        return None if _GENERAL_ALONE[1] else fast(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "decide_every", maybe)
    _GENERAL_ALONE[0] = request.param == "general path alone"
    yield request.param
    _GENERAL_ALONE[0] = False


def step_both(clock, when) -> dict:
    """One pass at ``when``: the ALONE scope's claims one transaction each, the BATCH scope's
    claims in one batch; returns the outcome actions per scope and schedule."""
    clock.set(when)
    claims = take_claims(max_rows=1000)
    routing = dict(rows("select scope_id, routing_id from durable_schedule_scope"))
    mine = [c for c in claims if c.routing_id == routing[BATCH]]
    out = {ALONE: {}, BATCH: {}}
    for c in claims:
        if c.routing_id == routing[ALONE]:
            _GENERAL_ALONE[1] = _GENERAL_ALONE[0]
            try:
                o = process(c)
            finally:
                _GENERAL_ALONE[1] = False
            out[ALONE][c.schedule_id] = (o.action, o.materialized_kind, o.completed, o.reason,
                                         o.first, o.last)
    if mine:
        result = batch(mine)
        assert result.deferred == []
        for c, o in result.outcomes.items():
            out[BATCH][c.schedule_id] = (o.action, o.materialized_kind, o.completed, o.reason,
                                         o.first, o.last)
    return out


def test_batch__decides_moves_cursors_and_links_work_exactly_as_one_transaction_each(
        clock, target, decision_paths):
    # Every shape a pass meets, the same in two scopes: nominal, noop, coalesce behind a busy
    # slot, a freed coalesced occurrence, recovery ranges, a skipped range, After and At
    # completing, then a scope-generation fence suspending every active schedule.
    def setup(scope):
        for name in ("e1", "e2", "e3", "e4"):
            create(name, schedules.Every(TEN), target, scope=scope)
        create("skip", schedules.Every(TEN), target, scope=scope, misfire="skip")
        create("after", schedules.After(25 * MINUTE), target, scope=scope)
        create("at", schedules.At(at(30)), target, scope=scope)

    both(setup)
    seen = []
    seen.append(step_both(clock, at(10)))
    both(lambda s: [set_work_state(latest_work(s, n), "succeeded", s) for n in ("e2", "e3")])
    both(lambda s: set_work_state(latest_work(s, "e1"), "running", s))
    seen.append(step_both(clock, at(20)))  # e1, e4 and skip coalesce; e2, e3 nominal
    seen.append(step_both(clock, at(25) + SECOND))  # after: nominal + completion
    both(lambda s: set_work_state(latest_work(s, "e1"), "succeeded", s))
    seen.append(step_both(clock, at(25) + 2 * SECOND))  # e1's coalesced occurrence runs
    seen.append(step_both(clock, at(30)))  # at: nominal + completion; the rest coalesce/noop
    both(lambda s: [set_work_state(latest_work(s, n), "succeeded", s)
                    for n in ("e1", "e2", "e3", "e4", "skip")])
    seen.append(step_both(clock, at(30) + SECOND))  # freed coalesced occurrences
    both(lambda s: [set_work_state(latest_work(s, n), "succeeded", s)
                    for n in ("e1", "e2", "e3", "e4", "skip")])
    seen.append(step_both(clock, at(75)))  # recovery ranges; skip: a skipped range
    seen.append(step_both(clock, at(75) + SECOND))  # nothing due: no claims
    both(lambda s: rows("update durable_schedule_scope set generation = generation + 1"
                        " where scope_id = %s returning 1", (s,)))
    seen.append(step_both(clock, at(90)))  # the fence suspends

    actions = {a[0] for step in seen for a in step[BATCH].values()}
    assert {"nominal", "coalesce", "recovery", "skipped", "suspend", "noop"} <= actions
    for step in seen:
        assert step[ALONE] == step[BATCH]
    alone, batched = snapshot(ALONE), snapshot(BATCH)
    for part in alone:
        assert batched[part] == alone[part], part
    assert len(alone["work"]) >= 12


def test_batch__writes_the_same_work_row_as_the_single_bridge_for_a_planned_deadline_target(
        clock):
    # The template shortcut of the batch's Work acceptance (one validated request per target)
    # must bind what accept_in_scope binds: fingerprint, payload, policy, plan and deadline.
    from demo import work as demo_work

    # billing.send_invoice: reconcile_before_retry with a five-slot attempt plan.
    planned = demo_work.send_invoice.target(payload={"n": [1, "ü", {"z": None}]},
                                            deadline_after=HOUR)

    def setup(scope):
        for name in ("p1", "p2"):
            create(name, schedules.Every(HOUR), planned, scope=scope)

    both(setup)
    step_both(clock, T0 + HOUR)
    alone, batched = snapshot(ALONE), snapshot(BATCH)
    assert alone["work"] == batched["work"] and len(alone["work"]) == 2
    assert alone["work_history"] == batched["work_history"]
    assert alone["work"][0][8] is not None and alone["work"][0][9] == T0 + 2 * HOUR
    assert all(row[12] is not None for row in batched["work"])  # accepted_due_at


# ------------------------------------------------------------------ statements per batch
def statements_of_a_pass(n: int, when) -> tuple[int, int]:
    """(statements, schedules materialized) of one pass at ``when``."""
    count = [0]

    def counter(execute, sql, params, many, context):
        count[0] += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counter):
        counts = process_due(max_schedules=1000, lease_owner=OWNER)
    leave_transaction_forms()
    return count[0], counts.materialized


def test_batch__the_statements_of_a_pass_do_not_grow_with_the_number_of_schedules(
        clock, target):
    for i in range(5):
        create(f"a{i:03d}", schedules.Every(HOUR), target)
    clock.set(T0 + HOUR)
    small = statements_of_a_pass(5, T0 + HOUR)
    for i in range(60):
        create(f"b{i:03d}", schedules.Every(HOUR), target)  # first due at T0 + 2 h
    rows("update durable_work set state = 'succeeded' returning 1")  # free the a* slots
    clock.set(T0 + 2 * HOUR)
    large = statements_of_a_pass(65, T0 + 2 * HOUR)
    assert (small[1], large[1]) == (5, 65)
    assert small[0] == large[0]
    # The claim (role, claim), then one batch (scope; fences; definitions, dispatch rows, slots
    # and pending coalesced in one locking read; the free slots read again after the locks are
    # held, so a run-now or backfill Work committed while the read waited is seen; occurrences
    # with their Work, the closing write): 8; inside the test's transaction each of the two
    # durable blocks adds SAVEPOINT, RELEASE and a role check and restore (8 more).
    assert large[0] == 16


# ------------------------------------------------------------------ failure isolation
def tamper_generation(schedule_id: str) -> None:
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by) select scope_id, schedule_id, 2, kind,"
         " '{\"interval_us\": \"soon\", \"anchor\": null}', accepted_at_utc, target,"
         " overlap_policy, misfire_policy, safety_window, evaluator_version, ''"
         " from durable_schedule_generation where schedule_id = %s returning id", (schedule_id,))
    rows("update durable_schedule_definition set active_generation = 2 where schedule_id = %s"
         " returning id", (schedule_id,))


def many(target, n: int = 20) -> list[str]:
    names = [f"m{i:02d}" for i in range(n)]
    for name in names:
        create(name, schedules.Every(HOUR), target)
    return names


def test_one_unevaluable_schedule_in_a_batch_of_many__is_quarantined_the_others_progress(
        clock, target):
    names = many(target)
    tamper_generation("m07")
    counts = run_pass(clock, T0 + HOUR)
    assert (counts.claimed, counts.materialized, counts.suspended) == (20, 19, 1)
    bad = definition("m07")
    assert (bad["state"], bad["suspension_reason"]) == ("suspended", "unevaluable")
    assert bad["suspension_evidence"]["code"] == "DS114"
    assert occurrences("m07") == []
    for name in names:
        if name != "m07":
            assert [o[1:5] for o in occurrences(name)] == [
                ("nominal", T0 + HOUR, T0 + HOUR, "materialized")]
            assert dispatch(name)[0:2] == (T0 + 2 * HOUR, None)


def plant_work(work_id, command_id: str, idempotency_key: str) -> None:
    """A Work row written by SQL behind the runtime's back, with facts no request of the
    batch's target has (work name 'x', fingerprint digest 'other')."""
    rows("insert into durable_work (scope_id, work_id, command_id, idempotency_key, work_name,"
         " work_version, payload, provider_safety, fingerprint_schema, fingerprint_digest,"
         " retry_policy, accepted_at, due_at, updated_at) values (%s, %s, %s, %s, 'x', 'v1',"
         " '{}', 'idempotent', 'v1', 'other', '{}', now(), now(), now()) returning 1",
         (SCOPE, work_id, command_id, idempotency_key))


def test_one_conflicting_schedule_in_a_batch_of_many__fails_alone_the_others_progress(
        clock, target):
    # A Work already holds m07's derived command with other facts: accepting it is
    # IdempotencyConflict (DS207). The batch rolls back, its schedules run one by one: m07
    # fails alone (and is raised at the end of the pass), the 19 others commit.
    names = many(target)
    derived = derive_link(OccurrenceIdentity(SCOPE, "m07", 1, "nominal", T0 + HOUR))
    plant_work(uuid.uuid4(), derived.command, derived.idempotency_key)
    with pytest.raises(IdempotencyConflict) as err:
        run_pass(clock, T0 + HOUR)
    assert err.value.context["schedule_id"] == "m07"
    assert err.value.context["pass_counts"]["materialized"] == 19
    assert occurrences("m07") == [] and definition("m07")["cursor_utc"] == T0
    assert dispatch("m07")[1] == OWNER  # its lease lapses; nothing was written for it
    for name in names:
        if name != "m07":
            assert [o[1:5] for o in occurrences(name)] == [
                ("nominal", T0 + HOUR, T0 + HOUR, "materialized")]
    assert len(works()) == 20  # 19 new, and the planted one


def test_a_work_id_held_under_another_request_key__fails_that_schedule_alone(
        clock, target, caplog):
    # A Work already holds m07's derived work id under another command and idempotency key.
    # The bridging statement's Work insert is a plain INSERT, so this row is a unique
    # violation there (not a silent skip): the batch rolls back whole, its schedules run
    # alone, and m07's single bridge answers as it always did (DS207, the work id belongs to
    # another request), alone; the 19 others commit, nothing twice.
    names = many(target)
    derived = derive_link(OccurrenceIdentity(SCOPE, "m07", 1, "nominal", T0 + HOUR))
    plant_work(derived.work_id, "other-command", "other-key")
    with pytest.raises(IdempotencyConflict) as err:
        run_pass(clock, T0 + HOUR)
    assert "rolled back" in caplog.text
    assert err.value.context["schedule_id"] == "m07"
    assert err.value.context["pass_counts"]["materialized"] == 19
    assert occurrences("m07") == [] and definition("m07")["cursor_utc"] == T0
    assert dispatch("m07")[1] == OWNER  # its lease lapses; nothing was written for it
    for name in names:
        if name != "m07":
            assert [o[1:5] for o in occurrences(name)] == [
                ("nominal", T0 + HOUR, T0 + HOUR, "materialized")]
            assert definition(name)["cursor_utc"] == T0 + HOUR
    assert len(works()) == 20  # 19 new, and the planted one, unchanged
    assert rows("select command_id, idempotency_key from durable_work where work_id = %s",
                (derived.work_id,)) == [("other-command", "other-key")]


def test_a_planted_link_in_a_batch__is_a_conflict_for_that_schedule_only(clock, target):
    names = many(target, 6)
    run_pass(clock, T0 + HOUR)
    rows("update durable_work set state = 'succeeded' returning 1")
    # m03's 13:00 occurrence exists already with a foreign link: DS113 for m03 alone.
    rows("insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,"
         " first_nominal_utc, last_nominal_utc, state, work_id, work_command,"
         " work_idempotency_key, created_at, updated_at) values (%s, 'm03', 1, 'nominal',"
         " %s, %s, 'materialized', %s, 'x', 'y', now(), now()) returning 1",
         (SCOPE, T0 + 2 * HOUR, T0 + 2 * HOUR, uuid.uuid4()))
    with pytest.raises(OccurrenceLinkConflict) as err:
        run_pass(clock, T0 + 2 * HOUR)
    assert (err.value.code, err.value.context["schedule_id"]) == ("DS113", "m03")
    for name in names:  # 12:00 and 13:00 each; m03's 13:00 is still only the planted row
        assert [o[2] for o in occurrences(name)] == [T0 + HOUR, T0 + 2 * HOUR]
    assert len(works()) == 6 + 5
    assert definition("m03")["cursor_utc"] == T0 + HOUR
    assert all(definition(n)["cursor_utc"] == T0 + 2 * HOUR for n in names if n != "m03")


# ------------------------------------------------------------------ leases
def test_a_lease_lost_before_the_batch_locks__fences_exactly_the_rows_it_covers(
        clock, target):
    names = many(target, 5)
    clock.set(T0 + HOUR)
    held = take_claims(lease=timedelta(seconds=30), max_rows=5)
    assert len(held) == 5
    # Our leases expire; another dispatcher takes two of the rows over before our batch runs.
    clock.set(T0 + HOUR + 31 * SECOND)
    taken = take_claims(owner="other", max_rows=2)
    assert len(taken) == 2
    result = batch(held)
    lost = {c.schedule_id for c in taken}
    by_id = {c.schedule_id: o for c, o in result.outcomes.items()}
    assert {s for s, o in by_id.items() if o.action == "superseded"} == lost
    assert {s for s, o in by_id.items() if o.action == "nominal"} == set(names) - lost
    for name in lost:
        assert occurrences(name) == [] and dispatch(name)[1] == "other"
    # The new holder materializes its two; every instant has exactly one Work.
    for c in taken:
        assert process(c, owner="other").action == "nominal"
    assert len(works()) == 5
    assert all(len(occurrences(n)) == 1 for n in names)


def test_an_api_change_between_claim_and_batch__supersedes_only_that_schedule(clock, target):
    names = many(target, 4)
    clock.set(T0 + HOUR)
    held = take_claims(max_rows=4)
    schedules.update(SCOPE, "m02", expected_revision=1)
    result = batch(held)
    by_id = {c.schedule_id: o.action for c, o in result.outcomes.items()}
    assert by_id == {n: ("superseded" if n == "m02" else "nominal") for n in names}
    assert occurrences("m02") == []


def test_batch_size_one__is_one_transaction_per_schedule(clock, target, monkeypatch):
    many(target, 3)
    calls = []
    real = batch_module.process_batch
    monkeypatch.setattr("durable_schedule.processor.processor.process_batch",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    assert run_pass(clock, T0 + HOUR, batch_size=1).materialized == 3
    assert calls == []
    rows("update durable_work set state = 'succeeded' returning 1")
    assert run_pass(clock, T0 + 2 * HOUR).materialized == 3
    assert calls == [1]


def test_process_due__refuses_a_bad_batch_size(clock, target):
    from durable_schedule.errors import DurableError

    many(target, 1)
    for bad in (0, 1001, True, "5"):
        with pytest.raises(DurableError) as err:
            run_pass(clock, T0 + HOUR, batch_size=bad)
        assert err.value.code == "DS406"
    assert works() == []


# ------------------------------------------------------------------ pipelined bridge and close
def test_batch__bridges_and_closes_in_one_pipeline_when_every_occurrence_is_new(
        clock, target, monkeypatch, caplog):
    names = many(target, 8)
    calls = []
    pipelined = batch_module._Batch._write_pipelined

    def spy(self, *args):
        calls.append(len(args[2]))  # the bridging items
        return pipelined(self, *args)

    monkeypatch.setattr(batch_module._Batch, "_write_pipelined", spy)
    counts = run_pass(clock, T0 + HOUR)
    assert calls == [8]
    assert (counts.claimed, counts.materialized) == (8, 8)
    assert "rolled back" not in caplog.text
    for name in names:
        assert [o[1:5] for o in occurrences(name)] == [
            ("nominal", T0 + HOUR, T0 + HOUR, "materialized")]
        assert dispatch(name)[0:2] == (T0 + 2 * HOUR, None)


@pytest.mark.parametrize("prepare", [True, False], ids=["pipelined", "one after the other"])
def test_an_occurrence_that_exists_with_its_derived_link__runs_alone_and_is_returned(
        clock, target, caplog, settings, prepare):
    # The batch writes only when every occurrence is new; m03's 13:00 occurrence exists
    # already, linked to its derived Work (a committed bridge whose cursor move is missing):
    # the bridging statement's plain insert raises a unique violation, in the pipeline as in
    # the statements run one after the other (PREPARE_STATEMENTS = False). The batch rolls
    # back before it commits, every schedule runs alone, and m03's single bridge returns the
    # stored link (compare or return): no second Work for it.
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}),
                                 "PREPARE_STATEMENTS": prepare}
    names = many(target, 6)
    run_pass(clock, T0 + HOUR)
    rows("update durable_work set state = 'succeeded' returning 1")
    derived = derive_link(OccurrenceIdentity(SCOPE, "m03", 1, "nominal", T0 + 2 * HOUR))
    rows("insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,"
         " first_nominal_utc, last_nominal_utc, state, work_id, work_command,"
         " work_idempotency_key, created_at, updated_at) values (%s, 'm03', 1, 'nominal',"
         " %s, %s, 'materialized', %s, %s, %s, now(), now()) returning 1",
         (SCOPE, T0 + 2 * HOUR, T0 + 2 * HOUR, derived.work_id, derived.command,
          derived.idempotency_key))
    counts = run_pass(clock, T0 + 2 * HOUR)
    assert "rolled back" in caplog.text
    assert (counts.claimed, counts.materialized) == (6, 6)
    m03 = next(o for o in counts.outcomes if o.schedule_id == "m03")
    assert (m03.work_id, m03.detail["link"]["created"]) == (derived.work_id, False)
    for name in names:
        assert [o[2] for o in occurrences(name)] == [T0 + HOUR, T0 + 2 * HOUR]
        assert definition(name)["cursor_utc"] == T0 + 2 * HOUR
    assert len(works()) == 6 + 5


def test_a_pass_of_plain_every_schedules__decides_each_on_the_fast_path(clock, target,
                                                                        monkeypatch):
    # The rows as the batch reads them (timestamptz loaded in UTC, the stored policies) meet
    # every precondition of evaluation/every_fast.py: decide() is never called for them.
    names = many(target, 6)
    general, fast = [], []
    real_decide, real_fast = evaluate_module.decide, evaluate_module.decide_every

    def counted_decide(*args, **kwargs):
        general.append(1)
        return real_decide(*args, **kwargs)

    def counted_fast(*args, **kwargs):
        got = real_fast(*args, **kwargs)
        fast.append(got is not None)
        return got

    monkeypatch.setattr(evaluate_module, "decide", counted_decide)
    monkeypatch.setattr(evaluate_module, "decide_every", counted_fast)
    counts = run_pass(clock, T0 + HOUR)
    assert (counts.claimed, counts.materialized) == (6, 6)
    assert fast == [True] * 6 and general == []
    for name in names:
        assert [o[1:5] for o in occurrences(name)] == [
            ("nominal", T0 + HOUR, T0 + HOUR, "materialized")]
