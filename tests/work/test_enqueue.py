"""Issue 3 item 2 / docs/protocol/work.md: enqueue inside the caller's transaction, acceptance
instant, compare-or-return idempotency, fingerprints v1/v2."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from demo.models import Order
from django.db import connection, transaction

from durable_schedule import work
from durable_schedule.errors import (
    IdempotencyConflict,
    InvalidArgument,
    InvalidIdentifier,
    InvalidScope,
    WrongRole,
)
from durable_schedule.evaluation.fingerprint import SCHEMA_V1, SCHEMA_V2
from durable_schedule.work.enqueue import WorkRequest, accept_in_scope
from tests.conftest import T0
from tests.work.conftest import MIN, count, dispatch, history, one, work_row

pytestmark = pytest.mark.django_db

RETRY = work.RetryPolicy(maximum_attempts=5, maximum_elapsed=timedelta(hours=4),
                         initial_retry_delay=5 * MIN, maximum_retry_delay=timedelta(hours=1))
PLAN = work.AttemptPlan("attempt-plan-v1", tuple(m * MIN for m in (0, 5, 20, 60, 180)),
                        240 * MIN)
PLANNED = work.ExecutionPolicy.for_attempt_plan(RETRY, PLAN)


def request(**changes) -> WorkRequest:
    fields = dict(command_id="order-42", idempotency_key="invoice-42",
                  work_name="billing.send_invoice", work_version="v1", payload={"order": 42},
                  provider_safety="reconcile_before_retry")
    fields.update(changes)
    return WorkRequest(**fields)


def session_state() -> tuple[str, str]:
    return one("select current_user, coalesce(current_setting('durable_schedule.scope_id',"
               " true), '')")


# ------------------------------------------------------------------ acceptance
def test_enqueue__accepted_at_is_the_database_clock_at_insertion(clock):
    accepted = work.enqueue("tenant-a", request())
    assert accepted.created and accepted.state == "pending" and accepted.accepted_at == T0
    assert work_row(accepted.work_id, "accepted_at", "due_at", "scope_id") == (T0, T0, "tenant-a")


def test_enqueue__writes_work_dispatch_row_and_history_together(clock):
    accepted = work.enqueue("tenant-a", request(due_at=T0 + 10 * MIN))
    assert dispatch(accepted.work_id) == (T0 + 10 * MIN, None)
    assert history(accepted.work_id) == ["accepted"]


def test_enqueue__a_long_caller_transaction_consumes_part_of_the_window(clock):
    deadline = T0 + 60 * MIN
    with transaction.atomic():
        Order.objects.create(number=1)
        clock.advance(50 * MIN)  # the caller's transaction is still open 50 minutes later
        accepted = work.enqueue("tenant-a", request(deadline=deadline,
                                                    policy=work.ExecutionPolicy(RETRY)))
    assert accepted.accepted_at == T0 + 50 * MIN
    snapshot = work.get("tenant-a", accepted.work_id).execution
    assert snapshot.admission_cutoff == deadline  # ten minutes left, not sixty


def test_enqueue__a_planned_slot_zero_is_the_insertion_instant(clock):
    with transaction.atomic():
        clock.advance(30 * MIN)
        accepted = work.enqueue("tenant-a", request(policy=PLANNED))
    info = work.get("tenant-a", accepted.work_id)
    assert info.due_at == T0 + 30 * MIN
    assert info.execution.admission_cutoff == T0 + 270 * MIN


def test_enqueue__rollback_of_the_caller_removes_its_row_and_the_work(clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        Order.objects.create(number=7)
        work.enqueue("tenant-a", request())
        raise RuntimeError("the caller fails after enqueue")
    assert Order.objects.count() == 0
    assert count("durable_work") == 0 and count("durable_work_dispatch") == 0


def test_enqueue__leaves_the_callers_role_and_scope_as_found(clock):
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("select set_config('durable_schedule.scope_id', 'caller-scope', true)")
        before = session_state()
        work.enqueue("tenant-a", request())
        assert session_state() == before == ("postgres", "caller-scope")
        Order.objects.create(number=1)  # the runtime role may not write demo_order
    assert Order.objects.count() == 1


def test_enqueue__two_scopes_in_one_atomic_block_land_in_their_own_scope(clock):
    with transaction.atomic():
        a = work.enqueue("tenant-a", request())
        b = work.enqueue("tenant-b", request())
    assert a.work_id != b.work_id and a.created and b.created
    assert work_row(a.work_id, "scope_id") == ("tenant-a",)
    assert work_row(b.work_id, "scope_id") == ("tenant-b",)


def test_accept_in_scope__refuses_a_cursor_that_is_not_scoped_as_the_runtime(clock):
    with pytest.raises(WrongRole), connection.cursor() as cur:
        accept_in_scope(cur, "tenant-a", request())
    assert count("durable_work") == 0


def test_accept_in_scope__records_the_source_occurrence_and_a_given_work_id(clock):
    from durable_schedule.store.transactions import scoped

    wid = uuid.uuid5(uuid.NAMESPACE_URL, "occurrence-1")
    with scoped("tenant-a") as cur:
        accepted = accept_in_scope(cur, "tenant-a", request(work_id=wid))
    assert accepted.work_id == wid


# ------------------------------------------------------------------ idempotency
def test_duplicate__identical_request_returns_the_original(clock):
    first = work.enqueue("tenant-a", request(policy=PLANNED, deadline=T0 + 200 * MIN))
    clock.advance(5 * MIN)
    again = work.enqueue("tenant-a", request(policy=PLANNED, deadline=T0 + 200 * MIN))
    assert (again.work_id, again.accepted_at, again.created) == (first.work_id, T0, False)
    assert count("durable_work") == 1 and count("durable_work_history") == 1


@pytest.mark.parametrize("state", ["succeeded", "expired"])
def test_duplicate__resolves_to_the_original_even_after_it_finished(clock, state):
    first = work.enqueue("tenant-a", request())
    with connection.cursor() as cur:
        cur.execute("update durable_work set state = %s", [state])
    again = work.enqueue("tenant-a", request())
    assert (again.work_id, again.state, again.created) == (first.work_id, state, False)


@pytest.mark.parametrize("change", [
    pytest.param({"payload": {"order": 43}}, id="payload"),
    pytest.param({"provider_safety": "idempotent"}, id="safety"),
    pytest.param({"work_version": "v2"}, id="version"),
    pytest.param({"due_at": T0 + MIN}, id="due-time"),
    pytest.param({"deadline": T0 + 201 * MIN}, id="deadline"),
    pytest.param({"deadline": None}, id="deadline-dropped"),
    pytest.param({"policy": work.ExecutionPolicy.for_attempt_plan(
        RETRY, work.AttemptPlan("attempt-plan-v1", PLAN.offsets, 239 * MIN))}, id="circuit"),
    pytest.param({"policy": work.ExecutionPolicy.for_attempt_plan(
        RETRY, work.AttemptPlan("attempt-plan-v1", tuple(m * MIN for m in (0, 5, 20, 60, 179)),
                                240 * MIN))}, id="plan-offset"),
    pytest.param({"policy": work.ExecutionPolicy.for_attempt_plan(
        work.RetryPolicy(5, timedelta(hours=4), 5 * MIN, timedelta(hours=1),
                         lease_duration=2 * MIN), PLAN)}, id="retry-lease"),
    pytest.param({"policy": work.ExecutionPolicy(RETRY)}, id="plan-dropped"),
    pytest.param({"work_id": uuid.uuid4()}, id="explicit-other-work-id"),
])
def test_conflict__a_changed_fact_under_the_same_identity_is_refused(clock, change):
    base = {"policy": PLANNED, "deadline": T0 + 200 * MIN}
    if "due_at" in change:
        base = {"policy": work.ExecutionPolicy(RETRY), "deadline": T0 + 200 * MIN}
    first = work.enqueue("tenant-a", request(**base))
    with pytest.raises(IdempotencyConflict) as raised:
        work.enqueue("tenant-a", request(**{**base, **change}))
    assert raised.value.code == "DS207"
    assert count("durable_work") == 1 and count("durable_work_history") == 1
    assert work.get("tenant-a", first.work_id).state == "pending"


def test_conflict__a_work_id_taken_by_another_command_is_refused(clock):
    wid = uuid.uuid4()
    work.enqueue("tenant-a", request(work_id=wid))
    with pytest.raises(IdempotencyConflict):
        work.enqueue("tenant-a", request(command_id="order-43", work_id=wid))
    assert count("durable_work") == 1


def test_duplicate__without_an_explicit_work_id_returns_the_original_id(clock):
    first = work.enqueue("tenant-a", request())
    assert work.enqueue("tenant-a", request()).work_id == first.work_id


def test_duplicate__the_same_identity_in_another_scope_is_new_work(clock):
    a = work.enqueue("tenant-a", request())
    b = work.enqueue("tenant-b", request())
    assert b.created and b.work_id != a.work_id


# ------------------------------------------------------------------ fingerprints
def test_fingerprint__legacy_v1_digest_and_canonical_payload_are_pinned(clock):
    accepted = work.enqueue("tenant-a", request(payload={"order": 42, "lines": [1, 2]}))
    assert work_row(accepted.work_id, "fingerprint_schema", "fingerprint_digest") == (
        SCHEMA_V1, "61a876d1e7d01ed2066fe98a7d5fa15886c8324dbb8ec0e3bb0b1daa0ce295df")


def test_fingerprint__acceptance_instant_is_never_hashed(clock):
    a = work.enqueue("tenant-a", request())
    clock.advance(MIN)
    b = work.enqueue("tenant-a", request(command_id="order-43"))
    digests = [work_row(w, "fingerprint_digest")[0] for w in (a.work_id, b.work_id)]
    assert digests[0] == digests[1]


@pytest.mark.parametrize("changes", [
    {"policy": PLANNED}, {"deadline": T0 + MIN}, {"policy": work.ExecutionPolicy(RETRY)}])
def test_fingerprint__opt_in_requests_use_v2(clock, changes):
    accepted = work.enqueue("tenant-a", request(**changes))
    assert work_row(accepted.work_id, "fingerprint_schema") == (SCHEMA_V2,)


def test_enqueue__legacy_work_stores_the_default_retry_policy_and_no_plan(clock):
    accepted = work.enqueue("tenant-a", request())
    stored = work_row(accepted.work_id, "retry_policy", "attempt_plan", "execution_deadline")
    assert (json.loads(stored[0]), stored[1], stored[2]) == (work.RetryPolicy().to_json(), None,
                                                             None)


# ------------------------------------------------------------------ bad input writes nothing
@pytest.mark.parametrize("changes, error", [
    ({"command_id": ""}, InvalidIdentifier),
    ({"command_id": "x" * 201}, InvalidIdentifier),
    ({"idempotency_key": "key\n1"}, InvalidIdentifier),
    ({"work_name": " padded"}, InvalidIdentifier),
    ({"provider_safety": "exactly_once"}, InvalidArgument),
    ({"policy": {"retry": {}}}, InvalidArgument),
    ({"work_id": "not-a-uuid-object"}, InvalidArgument),
])
def test_enqueue__bad_request_fields_are_refused_before_any_write(clock, changes, error):
    with pytest.raises(error):
        work.enqueue("tenant-a", request(**changes))
    assert count("durable_work") == 0


def test_enqueue__a_bad_scope_is_refused_before_any_write(clock):
    with pytest.raises(InvalidScope):
        work.enqueue("tenant\x00a", request())
    assert count("durable_work") == 0 and count("durable_schedule_scope") == 0


# ------------------------------------------------------------------ commit visibility
def _committed_work(conn) -> int:
    return conn.execute("select count(*) from durable_work").fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_enqueue__work_exists_for_workers_only_once_the_caller_commits(committed_clock,
                                                                        pg_factory):
    other = pg_factory(autocommit=True)
    with transaction.atomic():
        Order.objects.create(number=1)
        work.enqueue("tenant-a", request())
        assert _committed_work(other) == 0  # a worker cannot see (or claim) it yet
    assert _committed_work(other) == 1


@pytest.mark.django_db(transaction=True)
def test_enqueue__outside_any_atomic_block_commits_on_its_own(committed_clock, pg_factory):
    other = pg_factory(autocommit=True)
    work.enqueue("tenant-a", request())
    assert _committed_work(other) == 1
    assert session_state() == ("postgres", "")
