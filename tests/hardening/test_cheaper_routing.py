"""Schema 15 (issue 16, docs/benchmarks.md "Acceptance, fifth look"): the dispatch routing
trigger's function carries no pinned search_path. The guarantees stay those of schema 14: every
dispatch insert gets its Work row's queue and priority whatever it wrote (the routing tests of
tests/hardening/test_cheaper_triggers.py and tests/work/test_queues.py run against this
schema), nothing in the function is resolved through a planted search path, and no PUBLIC
execute."""

from __future__ import annotations

import psycopg
import pytest

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

        done = _manage(url, "migrate", "--noinput")
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
