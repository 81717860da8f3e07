"""Schema 15, adversarial review: the acceptance's object form {"shared", "items"} and the
unpinned dispatch routing function, against crafted input and the real roles.

The object form must write nothing the array form (schema 14's) could not: the same answers
and facts for the same items, all-or-nothing across several shared sets, a crafted index or a
missing "items" writing nothing, and the role, scope and identifier checks (DS302, not_scoped,
DS115) unchanged. The routing copy must read the store's Work row whatever the inserter's
search path holds (a planted operator, a temporary table)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import psycopg
import pytest

from durable_schedule.evaluation.policy import ExecutionPolicy, RetryPolicy
from tests.hardening.test_cheaper_routing import _ACCEPT, _accept, _forms, _request
from tests.hardening.test_cheaper_triggers import SCOPE, _count, _scope, _work, scratch_store
from tests.pgroles import RUNTIME, become, refused

_TABLES = ("durable_work", "durable_work_dispatch", "durable_work_history")


def _counts(cur) -> tuple[int, ...]:
    return tuple(_count(cur, t) for t in _TABLES)


def _answers(rows) -> list[tuple]:
    """(item, status, state, facts) of each row: what the client reads besides the work id."""
    return [(r[0], r[1], r[3], r[4]) for r in rows]


@pytest.mark.django_db
@pytest.mark.parametrize("index", [-1, 2, 2147483647, "x", 0.5, [0], {"n": 0}])
def test_object_form__a_crafted_shared_index_writes_nothing(pg, index):
    cur = pg.cursor()
    decoded = json.loads(_forms([_request(0), _request(1, queue="mail")])[0])
    assert len(decoded["shared"]) == 2
    decoded["items"][1]["shared"] = index
    err = refused(pg, _ACCEPT, (SCOPE, json.dumps(decoded)))
    assert err is not None, index
    # out of range: NULL names (23502); not an integer: 22P02; the +1 overflowing: 22003
    assert err.sqlstate in ("23502", "22P02", "22003"), (index, err.sqlstate, err)
    assert _counts(cur) == (0, 0, 0)


@pytest.mark.django_db
def test_object_form__an_items_own_members_never_override_its_shared_set(pg):
    # An item that names a set and carries members of its own is read through the set: a
    # crafted work name, queue or priority next to "shared" is ignored, not written.
    cur = pg.cursor()
    decoded = json.loads(_forms([_request(0), _request(1)])[0])
    decoded["items"][1].update(work_name="t.other", queue_name="vip", priority=100,
                               provider_safety="unsafe")
    rows = _accept(cur, json.dumps(decoded))
    assert [r[1] for r in rows] == ["created", "created"]
    cur.execute("select w.command_id, w.work_name, w.provider_safety, d.queue_name, d.priority"
                "  from durable_work w join durable_work_dispatch d on d.work_ref = w.id"
                " order by 1")
    assert cur.fetchall() == [("cmd-0", "t.job", "idempotent", "default", 0),
                              ("cmd-1", "t.job", "idempotent", "default", 0)]


@pytest.mark.django_db
def test_object_form__sets_that_differ_in_one_member_are_kept_apart(pg):
    # Two definitions in one call that differ only in one shared member each: every item gets
    # its own set's value, as its complete item in the array form would have written it.
    cur = pg.cursor()
    deadline = datetime(2027, 1, 1, tzinfo=UTC)
    due = datetime(2026, 12, 1, tzinfo=UTC)
    variants = [{}, {"work_version": "v2"}, {"priority": 1}, {"queue": "mail"},
                {"deadline": deadline}, {"due_at": due},
                {"provider_safety": "reconcile_before_retry"},
                {"policy": ExecutionPolicy.from_retry_policy(RetryPolicy(maximum_attempts=7))}, {}]
    requests = [_request(i, **v) for i, v in enumerate(variants)]
    obj, arr = _forms(requests)
    assert len(json.loads(obj)["shared"]) == 8  # the first and last share theirs
    query = ("select w.command_id, w.work_version, w.provider_safety, w.retry_policy,"
             "       w.execution_deadline, w.accepted_due_at = %s, d.queue_name, d.priority"
             "  from durable_work w join durable_work_dispatch d on d.work_ref = w.id"
             " order by 1")
    written = {}
    for form, parameter in (("object", obj), ("array", arr)):
        with pg.transaction(force_rollback=True):
            assert [r[1] for r in _accept(cur, parameter)] == ["created"] * 9
            cur.execute(query, (due,))
            written[form] = cur.fetchall()
    by_object = written["object"]
    assert by_object == written["array"]
    assert [r[1:] for r in by_object] == [
        ("v1", "idempotent", requests[0].retry_json, None, False, "default", 0),
        ("v2", "idempotent", requests[1].retry_json, None, False, "default", 0),
        ("v1", "idempotent", requests[2].retry_json, None, False, "default", 1),
        ("v1", "idempotent", requests[3].retry_json, None, False, "mail", 0),
        ("v1", "idempotent", requests[4].retry_json, deadline, False, "default", 0),
        ("v1", "idempotent", requests[5].retry_json, None, True, "default", 0),
        ("v1", "reconcile_before_retry", requests[6].retry_json, None, False, "default", 0),
        ("v1", "idempotent", requests[7].retry_json, None, False, "default", 0),
        ("v1", "idempotent", requests[8].retry_json, None, False, "default", 0)]
    assert by_object[7][3] != by_object[0][3]


@pytest.mark.django_db
def test_object_form__every_status_and_fact_is_the_array_forms(pg):
    # One batch holding a duplicate, a conflict, a tampered row, an explicit work id that
    # names another Work, a taken work id and a new item, under three shared sets: the object
    # form answers exactly what the array form answers, and writes nothing (rolled back).
    cur = pg.cursor()
    seed = [_request(0), _request(1, queue="mail"), _request(2, work_version="v2"),
            _request(3)]
    _accept(cur, _forms(seed)[0])
    cur.execute("select work_id from durable_work where command_id = 'cmd-3'")
    (taken,) = cur.fetchone()
    cur.execute("update durable_work set retry_policy = '{\"max_attempts\": 99}'"
                " where command_id = 'cmd-2'")
    cur.execute("select work_id from durable_work where command_id = 'cmd-1'")
    (work_of_1,) = cur.fetchone()
    batch = [_request(0),  # duplicate
             _request(1, queue="mail", payload={"row": "other"}),  # conflict
             _request(2, work_version="v2"),  # tampered
             _request(3, work_id=uuid.UUID(int=5)),  # explicit, names another id: other_work_id
             _request(4, work_id=taken),  # a new identity with a taken work id
             _request(5, queue="mail")]  # new: rolled back
    obj, arr = _forms(batch)
    before = _counts(cur)
    answers = {}
    for form, parameter in (("object", obj), ("array", arr)):
        rows = _accept(cur, parameter)
        answers[form] = rows
        assert _counts(cur) == before, form
    assert answers["object"] == answers["array"]
    assert _answers(answers["object"]) == [
        (0, "duplicate", "pending", None), (1, "conflict", "pending", ["payload"]),
        (2, "tampered", "pending", ["retry_policy"]), (3, "other_work_id", "pending", None),
        (4, "work_id_taken", None, ["work_name", "work_version", "payload", "provider_safety",
                                    "retry_policy"]),
        (5, "rolled_back", "pending", None)]
    assert answers["object"][1][2] == work_of_1


@pytest.mark.django_db
def test_object_form__only_duplicates_and_new_items_of_several_sets_are_all_written(pg):
    cur = pg.cursor()
    _accept(cur, _forms([_request(0), _request(1, priority=2)])[0])
    rows = _accept(cur, _forms([_request(0), _request(1, priority=2), _request(2, queue="q"),
                                _request(3, work_version="v9")])[0])
    assert [r[1] for r in rows] == ["duplicate", "duplicate", "created", "created"]
    assert _counts(cur) == (4, 4, 4)


@pytest.mark.django_db
@pytest.mark.parametrize("parameter", ['{"shared": [], "items": []}', '{"shared": []}', '{}',
                                       '[]'])
def test_object_form__no_items_answers_nothing_and_writes_nothing(pg, parameter):
    cur = pg.cursor()
    assert _accept(cur, parameter) == []
    assert _counts(cur) == (0, 0, 0)


@pytest.mark.django_db
@pytest.mark.parametrize("items", ["one", "null", "number"])
def test_object_form__items_that_are_not_an_array_are_refused(pg, items):
    cur = pg.cursor()
    decoded = json.loads(_forms([_request(0), _request(1)])[0])
    decoded["items"] = {"one": decoded["items"][0], "null": None, "number": 3}[items]
    err = refused(pg, _ACCEPT, (SCOPE, json.dumps(decoded)))
    assert err is not None and err.sqlstate == "22023", err
    assert _counts(cur) == (0, 0, 0)


_BRIDGE = ("select item, status, work_id, state, facts"
           "  from durable_schedule_accept_work(%s, %s::jsonb, false)")


@pytest.mark.django_db
def test_object_form__the_runtime_role_in_its_scope_several_items_without_entering(pg):
    # The schedule bridge's path: already durable_runtime in the scope (p_enter false).
    cur = pg.cursor()
    _scope(cur)
    obj, _ = _forms([_request(0), _request(1, queue="mail", priority=4), _request(2)])
    become(cur, RUNTIME, SCOPE)
    cur.execute(_BRIDGE, (SCOPE, obj))
    assert [r[1] for r in cur.fetchall()] == ["created"] * 3
    cur.execute("reset role")
    cur.execute("select w.command_id, d.queue_name, d.priority from durable_work w"
                "  join durable_work_dispatch d on d.work_ref = w.id order by 1")
    assert cur.fetchall() == [("cmd-0", "default", 0), ("cmd-1", "mail", 4),
                              ("cmd-2", "default", 0)]


@pytest.mark.django_db
def test_object_form__another_scope_or_role_is_not_scoped_and_writes_nothing(pg):
    cur = pg.cursor()
    _scope(cur)
    _scope(cur, "tenant-other")
    obj, _ = _forms([_request(0), _request(1)])
    become(cur, RUNTIME, SCOPE)
    cur.execute(_BRIDGE, ("tenant-other", obj))
    assert [r[1] for r in cur.fetchall()] == ["not_scoped"]
    cur.execute("reset role")
    cur.execute(_BRIDGE, (SCOPE, obj))  # the owner, not durable_runtime
    assert [r[1] for r in cur.fetchall()] == ["not_scoped"]
    assert _counts(cur) == (0, 0, 0)


@pytest.mark.django_db
def test_object_form__accept_rows_called_directly_cannot_write_into_another_scope(pg):
    # durable_runtime may execute accept_rows (schema 7's grant): called directly with another
    # scope's id and a crafted object form, row security refuses the write.
    cur = pg.cursor()
    _scope(cur)
    _scope(cur, "tenant-other")
    obj, _ = _forms([_request(0), _request(1)])
    become(cur, RUNTIME, SCOPE)
    err = refused(pg, "select * from durable_schedule_accept_rows(%s, %s::jsonb)",
                  ("tenant-other", obj))
    assert err is not None and err.sqlstate == "42501", err
    cur.execute("reset role")
    assert _counts(cur) == (0, 0, 0)


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["work_name", "work_version"])
def test_object_form__a_bad_identifier_in_a_shared_set_is_ds115(pg, field):
    cur = pg.cursor()
    _scope(cur)
    decoded = json.loads(_forms([_request(0), _request(1, work_version="v2")])[0])
    decoded["shared"][1][field] = "a\u202eb"
    become(cur, RUNTIME, SCOPE)
    err = refused(pg, _BRIDGE, (SCOPE, json.dumps(decoded)))
    assert err is not None and err.sqlstate == "23514" and "DS115" in str(err), err
    cur.execute("reset role")
    assert _counts(cur) == (0, 0, 0)


@pytest.mark.django_db
def test_object_form__a_large_batch_of_many_sets(pg):
    cur = pg.cursor()
    requests = [_request(i, priority=i % 50, queue=f"q{i % 7}") for i in range(1000)]
    obj, _ = _forms(requests)
    assert len(json.loads(obj)["shared"]) == 350
    rows = _accept(cur, obj)
    assert [r[1] for r in rows] == ["created"] * 1000
    cur.execute("select count(*) from durable_work w join durable_work_dispatch d"
                "  on d.work_ref = w.id"
                " where d.queue_name <> 'q' || (substr(w.command_id, 5)::int % 7)"
                "    or d.priority <> substr(w.command_id, 5)::int % 50")
    assert cur.fetchone() == (0,)


# -- the routing function, unpinned ------------------------------------------------------------

@pytest.mark.django_db
def test_routing__a_planted_equality_operator_is_never_used(pg):
    # An "=" for bigint that answers true for everything, planted in a schema put before
    # pg_catalog on the inserter's search path: the function names pg_catalog's operator.
    cur = pg.cursor()
    routing_id = _scope(cur)
    first, second = _work(cur, [("c1", "k", "t.job", "v1", "emails", 5),
                                ("c2", "k", "t.job", "v1", "reports", -3)])
    cur.execute("create schema planted")
    cur.execute("create function planted.always(bigint, bigint) returns boolean"
                " language sql immutable as $$ select true $$")
    cur.execute("create operator planted.= (leftarg = bigint, rightarg = bigint,"
                " function = planted.always)")
    cur.execute("grant usage on schema planted to public")
    become(cur, RUNTIME, SCOPE)
    cur.execute("set local search_path = planted, pg_catalog, public")
    cur.execute("select 1::bigint = 2::bigint")
    assert cur.fetchone() == (True,)  # the planted operator is what the session resolves
    for ref in (second, first):
        cur.execute("insert into public.durable_work_dispatch (scope_routing_id, work_ref,"
                    " due_at) values (%s, %s, now())", (routing_id, ref))
    cur.execute("reset role")
    cur.execute("reset search_path")
    cur.execute("select work_ref, queue_name, priority from durable_work_dispatch order by 1")
    assert cur.fetchall() == [(first, "emails", 5), (second, "reports", -3)]


@pytest.mark.django_db
def test_routing__a_temporary_work_table_of_the_runtime_role_is_never_read(pg):
    # pg_temp comes first for tables unless placed otherwise: a temporary durable_work made by
    # the runtime role itself does not reach the copy (the table is schema-qualified).
    cur = pg.cursor()
    routing_id = _scope(cur)
    (ref,) = _work(cur, [("c1", "k", "t.job", "v1", "emails", 5)])
    become(cur, RUNTIME, SCOPE)
    cur.execute("create temporary table durable_work (id bigint, queue_name text,"
                " priority smallint) on commit drop")
    cur.execute("insert into durable_work values (%s, 'vip', 100)", (ref,))
    cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                " values (%s, %s, now())", (routing_id, ref))
    cur.execute("reset role")
    cur.execute("select queue_name, priority from public.durable_work_dispatch"
                " where work_ref = %s", (ref,))
    assert cur.fetchone() == ("emails", 5)


@pytest.mark.django_db
def test_routing__the_runtime_roles_written_queue_and_priority_are_replaced(pg):
    # The runtime role has no grant on the routing columns of the dispatch table: naming them
    # is refused, and the copy is the only way they are written.
    cur = pg.cursor()
    routing_id = _scope(cur)
    (ref,) = _work(cur, [("c1", "k", "t.job", "v1", "emails", 5)])
    become(cur, RUNTIME, SCOPE)
    err = refused(pg, "insert into durable_work_dispatch (scope_routing_id, work_ref, due_at,"
                      " queue_name, priority) values (%s, %s, now(), 'vip', 100)",
                  (routing_id, ref))
    assert err is not None and err.sqlstate == "42501", err
    cur.execute("reset role")
    assert _count(cur, "durable_work_dispatch") == 0


@pytest.mark.django_db(transaction=True)
def test_object_form__a_login_role_granted_execute_but_not_runtime_writes_nothing(pg_factory):
    # A real (non-superuser) login role that was granted EXECUTE on the entry point but is not
    # a member of durable_runtime: entering is refused (42501) and nothing is written.
    admin = pg_factory(autocommit=True)
    role = "ds_review4_intruder"
    admin.execute(f"drop role if exists {role}")
    admin.execute(f"create role {role} login")
    try:
        admin.execute("grant execute on function"
                      f" durable_schedule_accept_work(text, jsonb, boolean) to {role}")
        intruder = pg_factory(user=role)
        obj, _ = _forms([_request(0), _request(1, queue="mail")])
        err = refused(intruder, _ACCEPT, (SCOPE, obj))
        assert err is not None and err.sqlstate == "42501", err
        intruder.rollback()
        assert _counts(admin.cursor()) == (0, 0, 0)
    finally:
        admin.execute("revoke execute on function"
                      f" durable_schedule_accept_work(text, jsonb, boolean) from {role}")
        admin.execute(f"drop role {role}")


@pytest.mark.django_db(transaction=True)
def test_mixed__object_form_against_a_schema_14_store_is_refused_and_writes_nothing():
    # Code of schema 15 deployed before `migrate` (against docs/compatibility.md's order): a
    # single enqueue (the array form) still works; several items are refused by schema 14's
    # acceptance (an object is not an array of items) with nothing of the call written.
    with scratch_store("ds_rvw_", "0014_cheaper_acceptance") as url:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            obj, arr = _forms([_request(0), _request(1, queue="mail")])
            err = refused(conn, _ACCEPT, (SCOPE, obj))
            assert err is not None and err.sqlstate == "22023", err
            # what durable_schedule/work/acceptance.py maps to SchemaBelowFloor (DS401)
            assert "array length of a non-array" in str(err), err
            assert _counts(cur) == (0, 0, 0)
            single = json.dumps(json.loads(arr)[:1])
            assert [r[1] for r in _accept(cur, single)] == ["created"]
            assert [r[1] for r in _accept(cur, arr)] == ["duplicate", "created"]
            conn.rollback()


@pytest.mark.django_db(transaction=True)
def test_object_form__a_batch_waiting_on_a_concurrent_one_finds_its_committed_rows(pg_factory):
    # Two object-form batches sharing one identity: the second waits on the first's insert,
    # and after the commit answers 'duplicate' for it (the new statement sees the committed
    # row) and creates its own; nothing twice.
    import threading

    first, second = pg_factory(), pg_factory()
    first.execute("insert into durable_schedule_scope (scope_id) values (%s)", (SCOPE,))
    first.commit()
    obj_a, _ = _forms([_request(0), _request(1)])
    obj_b, _ = _forms([_request(1), _request(2, queue="mail")])
    assert [r[1] for r in _accept(first.cursor(), obj_a)] == ["created", "created"]
    answers: list = []
    waiter = threading.Thread(target=lambda: answers.extend(_accept(second.cursor(), obj_b)))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive()  # waiting on cmd-1's uncommitted row
    first.commit()
    waiter.join(10)
    second.commit()
    assert [(r[0], r[1]) for r in answers] == [(0, "duplicate"), (1, "created")]
    cur = first.cursor()
    cur.execute("select w.command_id, d.queue_name from durable_work w"
                "  join durable_work_dispatch d on d.work_ref = w.id order by 1")
    assert cur.fetchall() == [("cmd-0", "default"), ("cmd-1", "default"), ("cmd-2", "mail")]
    assert _counts(cur) == (3, 3, 3)
    first.commit()
