"""Issue 16 item 4: ``enqueue_many`` -- one statement for N requests, compare-or-return per item,
all-or-nothing; and the one-statement acceptance as the real roles (RLS)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from demo.models import Order
from django.db import DatabaseError, connection, transaction

from durable_schedule import work
from durable_schedule.errors import IdempotencyConflict, InvalidArgument, WrongRole
from durable_schedule.work.acceptance import MAX_BATCH
from durable_schedule.work.enqueue import WorkRequest
from tests.conftest import T0
from tests.pgroles import RUNTIME, become
from tests.work.conftest import MIN, count, dispatch, history, rows, work_row

pytestmark = pytest.mark.django_db


def request(i: int | str, **changes) -> WorkRequest:
    fields = dict(command_id=f"import-{i}", idempotency_key="row", work_name="t.import",
                  work_version="v1", payload={"row": i}, provider_safety="idempotent")
    fields.update(changes)
    return WorkRequest(**fields)


def statements(fn):
    """Run ``fn`` and return (its result, the statements it sent through Django)."""
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        result = fn()
    return result, sent


# ------------------------------------------------------------------ acceptance
def test_enqueue_many__accepts_every_request_in_one_statement(clock):
    accepted, sent = statements(lambda: work.enqueue_many("tenant-a",
                                                          [request(i) for i in range(100)]))
    assert len(sent) == 1
    assert [a.command_id for a in accepted] == [f"import-{i}" for i in range(100)]
    assert all(a.created and a.state == "pending" and a.accepted_at == T0 for a in accepted)
    assert count("durable_work") == count("durable_work_dispatch") == 100
    assert count("durable_work_history") == 100
    assert history(accepted[7].work_id) == ["accepted"]
    assert dispatch(accepted[7].work_id) == (T0, None)


def test_enqueue__a_single_request_is_one_statement_too(clock):
    _, sent = statements(lambda: work.enqueue("tenant-a", request(1)))
    assert len(sent) == 1


def test_enqueue_many__returns_each_original_for_duplicates_and_creates_the_rest(clock):
    first = work.enqueue_many("tenant-a", [request(i) for i in range(3)])
    clock.advance(MIN)
    again = work.enqueue_many("tenant-a", [request(i) for i in range(5)])
    assert [a.created for a in again] == [False, False, False, True, True]
    assert [a.work_id for a in again[:3]] == [a.work_id for a in first]
    assert [a.accepted_at for a in again] == [T0] * 3 + [T0 + MIN] * 2
    assert count("durable_work") == 5 and count("durable_work_history") == 5


def test_enqueue_many__the_same_identity_twice_in_one_call_is_one_work(clock):
    accepted = work.enqueue_many("tenant-a", [request(1), request(2), request(1)])
    assert accepted[0].work_id == accepted[2].work_id != accepted[1].work_id
    assert count("durable_work") == 2


def test_enqueue_many__an_explicit_work_id_wins_over_a_generated_one(clock):
    wid = uuid.uuid4()
    accepted = work.enqueue_many("tenant-a", [request(1), request(1, work_id=wid)])
    assert accepted[0].work_id == accepted[1].work_id == wid


class _LoudUUID(uuid.UUID):
    """A UUID subclass that prints as a JSON fragment (an attack on the embedded parameter)."""

    def __str__(self) -> str:
        return 'x", "explicit": false, "command_id": "forged'


def test_enqueue_many__a_uuid_subclass_work_id_is_stored_as_its_128_bits(clock):
    wid = _LoudUUID("12345678-1234-5678-1234-567812345678")
    accepted = work.enqueue_many("tenant-a", [request(1, work_id=wid)])
    assert type(accepted[0].work_id) is uuid.UUID
    assert accepted[0].work_id == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert count("durable_work") == 1
    assert rows("select command_id from durable_work") == [("import-1",)]


# ------------------------------------------------------------------ all or nothing
def test_enqueue_many__one_conflict_among_duplicates_writes_nothing(clock):
    work.enqueue_many("tenant-a", [request(0), request(1)])
    batch = [request(0), request(5), request(1, payload={"row": "changed"}), request(6)]
    with pytest.raises(IdempotencyConflict) as raised:
        work.enqueue_many("tenant-a", batch)
    assert raised.value.code == "DS207"
    assert raised.value.context["refused_items"] == [(2, "conflict")]
    assert "nothing of the 4 requests was written" in str(raised.value)
    assert count("durable_work") == 2 and count("durable_work_dispatch") == 2
    assert count("durable_work_history") == 2


def test_enqueue_many__a_refusal_leaves_the_callers_transaction_usable(clock):
    work.enqueue("tenant-a", request(0))
    with transaction.atomic():
        Order.objects.create(number=1)
        with pytest.raises(IdempotencyConflict):
            work.enqueue_many("tenant-a", [request(9), request(0, work_version="v2")])
        Order.objects.create(number=2)  # the transaction goes on: the refusal was no error
    assert Order.objects.count() == 2 and count("durable_work") == 1


def test_enqueue_many__a_work_id_taken_by_another_identity_refuses_the_batch(clock):
    wid = uuid.uuid4()
    work.enqueue("tenant-a", request("holder", work_id=wid))
    with pytest.raises(IdempotencyConflict) as raised:
        work.enqueue_many("tenant-a", [request(1), request(2, work_id=wid)])
    assert raised.value.context["refused_items"] == [(1, "work_id_taken")]
    assert count("durable_work") == 1


@pytest.mark.parametrize("batch", [
    pytest.param(lambda: [request(1), request(1, payload={"row": 2})], id="same-key-other-facts"),
    pytest.param(lambda: [request(1, work_id=uuid.UUID(int=7)),
                          request(2, work_id=uuid.UUID(int=7))], id="one-work-id-two-keys"),
    pytest.param(lambda: [request(1, work_id=uuid.UUID(int=7)),
                          request(1, work_id=uuid.UUID(int=8))], id="same-key-two-work-ids"),
])
def test_enqueue_many__contradictions_inside_one_call_are_refused_before_any_write(clock,
                                                                                    batch):
    with pytest.raises(IdempotencyConflict):
        work.enqueue_many("tenant-a", batch())
    assert count("durable_work") == 0 and count("durable_schedule_scope") == 0


@pytest.mark.parametrize("bad, error", [
    ([], InvalidArgument),
    ("not a list", InvalidArgument),
    ([{"command_id": "x"}], InvalidArgument),
])
def test_enqueue_many__bad_arguments_are_refused_before_any_write(clock, bad, error):
    with pytest.raises(error):
        work.enqueue_many("tenant-a", bad)
    assert count("durable_work") == 0


def test_enqueue_many__more_than_the_batch_limit_is_refused_before_any_write(clock):
    with pytest.raises(InvalidArgument):
        work.enqueue_many("tenant-a", [request(i) for i in range(MAX_BATCH + 1)])
    assert count("durable_work") == 0


def test_enqueue_many__rollback_of_the_caller_removes_every_item(clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        Order.objects.create(number=7)
        work.enqueue_many("tenant-a", [request(i) for i in range(10)])
        raise RuntimeError("the caller fails after enqueue_many")
    assert Order.objects.count() == 0
    assert count("durable_work") == 0 and count("durable_work_dispatch") == 0
    assert count("durable_work_history") == 0


def test_enqueue_many__leaves_the_callers_role_and_scope_as_found(clock):
    state = ("select current_user, coalesce(current_setting('durable_schedule.scope_id', true),"
             " '')")
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("select set_config('durable_schedule.scope_id', 'caller-scope', true)")
        work.enqueue_many("tenant-a", [request(1), request(2)])
        assert rows(state) == [("postgres", "caller-scope")]
        Order.objects.create(number=1)
    assert work_row(work.list("tenant-a")[0].work_id, "scope_id") == ("tenant-a",)


# ------------------------------------------------------------------ the real roles
@pytest.fixture
def app_role():
    """A login-less application role like a web app's: not superuser, not BYPASSRLS, no table
    grants, a member of durable_runtime only. Entered inside the test's transaction."""
    role = f"durable_app_probe_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cur:
        cur.execute(f'create role "{role}" nologin nosuperuser nobypassrls inherit')
        cur.execute(f'grant durable_runtime to "{role}"')
        cur.execute(f'set local role "{role}"')
    return role


def test_rls__enqueue_many_as_an_application_role_lands_in_its_scope_only(clock, app_role):
    a = work.enqueue_many("tenant-a", [request(1), request(2)])
    b = work.enqueue_many("tenant-b", [request(1)])
    assert rows("select current_user")[0][0] == app_role  # role restored after each call
    # the app role outside the function: the runtime's grants, but no scope, so no rows
    assert rows("select count(*) from durable_work") == [(0,)]
    assert {i.work_id for i in work.list("tenant-a")} == {x.work_id for x in a}
    assert [i.work_id for i in work.list("tenant-b")] == [b[0].work_id]


def test_rls__the_acceptance_function_as_durable_runtime_sees_only_its_scope(clock, pg):
    with pg.cursor() as cur:
        cur.execute("select set_config('durable_schedule.scope_id', '', true)")
        become(cur, RUNTIME)
        items = ('[{"item": 0, "work_id": "%s", "explicit": false, "command_id": "c",'
                 ' "idempotency_key": "k", "work_name": "t", "work_version": "v1",'
                 ' "payload": {}, "provider_safety": "idempotent", "fingerprint_schema": "s",'
                 ' "fingerprint_digest": "d", "retry_policy": {}}]')
        cur.execute("select status from durable_schedule_accept_work('tenant-a', %s, true)",
                    [items % uuid.uuid4()])
        assert cur.fetchone()[0] == "created"
        # role and scope back as they were: the runtime without a scope sees no Work
        cur.execute("select current_user, current_setting('durable_schedule.scope_id', true)")
        assert cur.fetchone() == (RUNTIME, "")
        cur.execute("select count(*) from durable_work")
        assert cur.fetchone()[0] == 0
        # without p_enter, a cursor scoped to another scope is refused, nothing written
        cur.execute("select set_config('durable_schedule.scope_id', 'tenant-b', true)")
        cur.execute("select status from durable_schedule_accept_work('tenant-a', %s, false)",
                    [items % uuid.uuid4()])
        assert cur.fetchone()[0] == "not_scoped"
        cur.execute("select count(*) from durable_work")
        assert cur.fetchone()[0] == 0


def test_rls__the_dispatcher_and_public_cannot_run_the_acceptance_function(pg):
    for role in ("durable_dispatcher", "public"):
        with pg.cursor() as cur:
            cur.execute("select has_function_privilege(%s, "
                        "'durable_schedule_accept_work(text, jsonb, boolean)', 'execute')",
                        [role])
            assert cur.fetchone()[0] is False, role
    with pytest.raises(psycopg.errors.InsufficientPrivilege), pg.cursor() as cur:
        become(cur, "durable_dispatcher")
        cur.execute("select * from durable_schedule_accept_work('tenant-a', '[]', true)")


def test_rls__a_role_that_is_not_a_runtime_member_may_not_run_the_function(clock):
    """EXECUTE is granted to durable_runtime only: an application role must be its member (a
    test session is a superuser, which may SET ROLE to anything, so the grant is the guard)."""
    role = f"durable_outsider_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cur:
        cur.execute(f'create role "{role}" nologin nosuperuser nobypassrls inherit')
        for fn in ("durable_schedule_accept_work(text, jsonb, boolean)",
                   "durable_schedule_accept_rows(text, jsonb)"):
            cur.execute("select has_function_privilege(%s, %s, 'execute')", [role, fn])
            assert cur.fetchone()[0] is False, fn
    with pytest.raises(DatabaseError, match="permission denied for function"), \
            transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(f'set local role "{role}"')
        work.enqueue_many("tenant-a", [request(1), request(2)])
    assert count("durable_work") == 0


def test_accept_many_in_scope__the_bridge_form_writes_a_batch_with_its_occurrence_links(clock):
    from durable_schedule.store.transactions import scoped
    from durable_schedule.work.enqueue import accept_many_in_scope

    with scoped("tenant-a") as cur:
        accepted = accept_many_in_scope(cur, "tenant-a", [request(1), request(2)])
        with pytest.raises(InvalidArgument):
            accept_many_in_scope(cur, "tenant-a", [request(3)], source_occurrence_ids=[1, 2])
    assert [a.created for a in accepted] == [True, True]
    with pytest.raises(WrongRole), connection.cursor() as cur:
        accept_many_in_scope(cur, "tenant-a", [request(4), request(5)])
    assert count("durable_work") == 2


def test_enqueue_many__takes_the_default_scope_like_enqueue(clock):
    from django.test import override_settings

    with override_settings(DURABLE_SCHEDULE={"DEFAULT_SCOPE": "main"}):
        accepted = work.enqueue_many([request(1), request(2)])
    assert {i.work_id for i in work.list("main")} == {a.work_id for a in accepted}
