"""Schema 15 (issue 16, docs/benchmarks.md "Acceptance, fifth look").

The dispatch routing trigger's function carries no pinned search_path. The guarantees stay
those of schema 14: every dispatch insert gets its Work row's queue and priority whatever it
wrote (the routing tests of tests/hardening/test_cheaper_triggers.py and tests/work/
test_queues.py run against this schema), nothing in the function is resolved through a planted
search path, and no PUBLIC execute.

The acceptance takes its items as the array of complete items (schema 14 code, one enqueue) or
as the object form with each shared set once (enqueue_many); both forms answer alike, a refused
item still rolls back the others, and an item naming a shared set that is not there is refused
with nothing written."""

from __future__ import annotations

import json

import psycopg
import pytest

from durable_schedule.work import acceptance
from durable_schedule.work.enqueue import WorkRequest
from tests.hardening.test_cheaper_triggers import (
    SCOPE,
    _count,
    _manage,
    _scope,
    _work,
    scratch_store,
)
from tests.pgroles import RUNTIME, become, refused


@pytest.mark.django_db
def test_function__unpinned_schema_qualified_and_not_executable_by_public(pg):
    cur = pg.cursor()
    cur.execute("select p.proconfig, p.prosecdef, p.prosrc, n.nspname"
                "  from pg_proc p join pg_namespace n on n.oid = p.pronamespace"
                " where p.proname = 'durable_work_dispatch_routing'")
    rows = cur.fetchall()
    assert len(rows) == 1
    config, definer, body, schema = rows[0]
    assert config is None and definer is False
    assert f"FROM {schema}.durable_work w" in body, body
    assert "OPERATOR(pg_catalog.=)" in body, body
    cur.execute("select has_function_privilege('public', 'durable_work_dispatch_routing()',"
                " 'execute')")
    assert cur.fetchone() == (False,)
    cur.execute("select pg_get_triggerdef(oid) from pg_trigger"
                " where tgname = 'durable_work_dispatch_routing'")
    (definition,) = cur.fetchone()
    assert "BEFORE INSERT ON" in definition and "FOR EACH ROW" in definition
    assert "EXECUTE FUNCTION durable_work_dispatch_routing()" in definition


@pytest.mark.django_db
def test_routing__a_planted_work_table_on_the_search_path_is_never_read(pg):
    # A caller that puts its own durable_work (another queue and priority for the same id)
    # first on its search path still gets the store's Work routing: the table is qualified.
    cur = pg.cursor()
    routing_id = _scope(cur)
    (emails,) = _work(cur, [("c1", "k", "t.job", "v1", "emails", 5)])
    cur.execute("create schema planted")
    cur.execute("create table planted.durable_work (id bigint, queue_name text,"
                " priority smallint)")
    cur.execute("insert into planted.durable_work values (%s, 'vip', 100)", (emails,))
    cur.execute("grant usage on schema planted to public")
    cur.execute("grant select on planted.durable_work to public")
    become(cur, RUNTIME, SCOPE)
    cur.execute("set local search_path = planted, public")
    cur.execute("insert into public.durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                " values (%s, %s, now())", (routing_id, emails))
    cur.execute("reset role")
    cur.execute("select queue_name, priority from public.durable_work_dispatch"
                " where work_ref = %s", (emails,))
    assert cur.fetchone() == ("emails", 5)


@pytest.mark.django_db
def test_routing__a_dispatch_row_without_its_work_row_is_still_refused(pg):
    # No Work row behind the dispatch row: the copy finds nothing and sets both routing
    # columns to NULL (SELECT INTO without a row, as schema 9's function did), so the NOT NULL
    # constraint refuses the row before the foreign key would.
    cur = pg.cursor()
    routing_id = _scope(cur)
    err = refused(pg, "insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                      " values (%s, -1, now())", (routing_id,))
    assert err is not None and err.sqlstate == "23502", err


@pytest.mark.django_db(transaction=True)
def test_migrate__schema_15_forward_on_a_store_with_data():
    with scratch_store("ds_rte_", "0014_cheaper_acceptance") as url:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            routing_id = _scope(cur)
            refs = _work(cur, [("c1", "k", "t.job", "v1", "emails", 2),
                               ("c2", "k", "t.job", "v1", "reports", -1)])
            cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                        " values (%s, %s, now())", (routing_id, refs[0]))
            cur.execute("select schema_version from durable_schedule_store")
            assert cur.fetchone() == (14,)
            conn.commit()

        done = _manage(url, "migrate", "durable_schedule", "0015_cheaper_routing", "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("select schema_version, compatibility_floor from durable_schedule_store")
            assert cur.fetchone() == (15, 12)
            assert _count(cur, "durable_work") == 2
            cur.execute("select proconfig from pg_proc"
                        " where proname = 'durable_work_dispatch_routing'")
            assert cur.fetchone() == (None,)
            become(cur, RUNTIME, SCOPE)
            cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                        " values (%s, %s, now())", (routing_id, refs[1]))
            cur.execute("reset role")
            cur.execute("select work_ref, queue_name, priority from durable_work_dispatch")
            assert sorted(cur.fetchall()) == sorted([(refs[0], "emails", 2),
                                                     (refs[1], "reports", -1)])
            conn.rollback()


_ACCEPT = ("select item, status, work_id, state, facts"
           "  from durable_schedule_accept_work(%s, %s::jsonb, true)")


def _request(i: int, **changes) -> WorkRequest:
    fields = dict(command_id=f"cmd-{i}", idempotency_key="k", work_name="t.job",
                  work_version="v1", payload={"row": i}, provider_safety="idempotent")
    fields.update(changes)
    return WorkRequest(**fields)


def _forms(requests) -> tuple[str, str]:
    """The object form the client sends for several requests, and the same items as the array
    of complete items (schema 14's form): same work ids, same members."""
    parameter = acceptance.prepare(SCOPE, requests).parameter
    decoded = json.loads(parameter)
    complete = []
    for item in decoded["items"]:
        shared = decoded["shared"][item.pop("shared")]
        complete.append({**item, **shared})
    return parameter, json.dumps(complete)


def _accept(cur, parameter: str) -> list[tuple]:
    cur.execute(_ACCEPT, (SCOPE, parameter))
    return cur.fetchall()


@pytest.mark.django_db
@pytest.mark.parametrize("first", ["object", "array"])
def test_accept__both_forms_create_and_then_find_the_same_work(pg, first):
    cur = pg.cursor()
    requests = [_request(0), _request(1, queue="mail", priority=3), _request(2)]
    obj, arr = _forms(requests)
    one, other = (obj, arr) if first == "object" else (arr, obj)
    created = _accept(cur, one)
    assert [(r[0], r[1], r[3], r[4]) for r in created] == [
        (0, "created", "pending", None), (1, "created", "pending", None),
        (2, "created", "pending", None)]
    again = _accept(cur, other)
    assert [(r[0], r[1], r[4]) for r in again] == [(0, "duplicate", None), (1, "duplicate", None),
                                                    (2, "duplicate", None)]
    assert [r[2] for r in again] == [r[2] for r in created]
    cur.execute("select w.command_id, w.work_name, w.retry_policy = %s::jsonb, d.queue_name,"
                "       d.priority, h.event"
                "  from durable_work w join durable_work_dispatch d on d.work_ref = w.id"
                "  join durable_work_history h on h.work_id = w.work_id order by 1",
                (json.dumps(requests[0].retry_json),))
    assert cur.fetchall() == [("cmd-0", "t.job", True, "default", 0, "accepted"),
                              ("cmd-1", "t.job", True, "mail", 3, "accepted"),
                              ("cmd-2", "t.job", True, "default", 0, "accepted")]


@pytest.mark.django_db
@pytest.mark.parametrize("form", ["object", "array"])
def test_accept__a_refused_item_rolls_back_the_others_in_either_form(pg, form):
    cur = pg.cursor()
    _accept(cur, _forms([_request(0), _request(9)])[0])
    # Tamper with the stored payload of cmd-9 (as the owner): a repeat is 'tampered'.
    cur.execute("update durable_work set payload = '{\"row\": 99}' where command_id = 'cmd-9'")
    batch = [_request(0, payload={"row": "other"}), _request(1), _request(9), _request(2)]
    rows = _accept(cur, _forms(batch)[0 if form == "object" else 1])
    assert [(r[0], r[1], r[4]) for r in rows] == [
        (0, "conflict", ["payload"]), (1, "rolled_back", None), (2, "tampered", ["payload"]),
        (3, "rolled_back", None)]
    assert _count(cur, "durable_work") == 2
    assert _count(cur, "durable_work_dispatch") == 2
    assert _count(cur, "durable_work_history") == 2


@pytest.mark.django_db
def test_accept__an_item_naming_a_missing_shared_set_is_refused_with_nothing_written(pg):
    cur = pg.cursor()
    decoded = json.loads(_forms([_request(0), _request(1)])[0])
    decoded["items"][1]["shared"] = 5
    err = refused(pg, _ACCEPT, (SCOPE, json.dumps(decoded)))
    assert err is not None and err.sqlstate == "23502", err
    assert _count(cur, "durable_work") == 0


@pytest.mark.django_db
def test_accept__an_object_form_item_without_a_shared_set_is_read_whole(pg):
    cur = pg.cursor()
    obj, arr = _forms([_request(0), _request(1, queue="mail")])
    decoded = json.loads(obj)
    decoded["items"][1] = json.loads(arr)[1]  # complete, no "shared"
    rows = _accept(cur, json.dumps(decoded))
    assert [r[1] for r in rows] == ["created", "created"]
    cur.execute("select command_id, queue_name from durable_work order by 1")
    assert cur.fetchall() == [("cmd-0", "default"), ("cmd-1", "mail")]
