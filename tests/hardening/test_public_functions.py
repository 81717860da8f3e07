"""Issue 11 item 8: no function of the store is executable by PUBLIC, pgtrigger's included, and
it stays so when pgtrigger (re-)installs triggers on migrate."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import connection

from tests.pgroles import DISPATCHER, RUNTIME, become, refused

pytestmark = pytest.mark.django_db

#: Every function of the schema, found through the catalogue (not a list): pg_proc by
#: namespace, minus extension members (pg_depend 'e'), owned by the migration owner.
_SCHEMA_FUNCTIONS = """
select p.oid::regprocedure::text, has_function_privilege('public', p.oid, 'EXECUTE')
  from pg_proc p
 where p.pronamespace = current_schema()::regnamespace
   and p.proowner = (select oid from pg_roles where rolname = current_user)
   and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass
                    and d.objid = p.oid and d.deptype = 'e')
"""


def _functions(cur) -> dict[str, bool]:
    cur.execute(_SCHEMA_FUNCTIONS)
    return dict(cur.fetchall())


def test_catalogue__no_function_of_the_schema_is_executable_by_public():
    with connection.cursor() as cur:
        found = _functions(cur)
        cur.execute("select f::text from durable_schedule_store_functions() f")
        store = {r[0] for r in cur.fetchall()}
    assert any(name.startswith("pgtrigger_append_only_") for name in found)
    assert "_pgtrigger_should_ignore(name)" in found
    assert "claim_schedule_dispatch(text,interval,integer)" in found
    assert {name for name, public in found.items() if public} == set()
    # The store's own definition of "its functions" is every function of this schema here.
    assert store == set(found)


def test_catalogue__pgtriggers_helper_is_refused_to_the_roles_that_have_no_grant(pg):
    for role in (DISPATCHER, RUNTIME):
        cur = pg.cursor()
        become(cur, role)
        err = refused(pg, "select _pgtrigger_should_ignore('x')")
        assert err is not None and err.sqlstate == "42501", role
        cur.execute("reset role")


def test_reinstall__pgtrigger_install_keeps_the_functions_closed():
    call_command("pgtrigger", "install")
    with connection.cursor() as cur:
        assert {n for n, public in _functions(cur).items() if public} == set()


def test_new_trigger_function__is_reported_by_the_check_and_closed_after_migrate():
    # What pgtrigger does when it installs a trigger the migrations did not create yet: a new
    # function with PostgreSQL's default PUBLIC EXECUTE, attached to a store table.
    with connection.cursor() as cur:
        cur.execute("create function pgtrigger_append_only_fresh() returns trigger"
                    " language plpgsql as $$ begin raise exception 'no'; end $$")
        cur.execute("create trigger pgtrigger_append_only_fresh before update"
                    " on durable_work_quarantine for each row"
                    " execute function pgtrigger_append_only_fresh()")
        assert _functions(cur)["pgtrigger_append_only_fresh()"] is True
    problems = [m.msg for m in checks.run_checks() if m.id == "durable_schedule.E003"]
    assert any("PUBLIC may EXECUTE pgtrigger_append_only_fresh()" in m for m in problems)

    from django.core.management.sql import emit_post_migrate_signal

    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    with connection.cursor() as cur:
        assert _functions(cur)["pgtrigger_append_only_fresh()"] is False
    assert not [m for m in checks.run_checks() if m.id == "durable_schedule.E003"]
