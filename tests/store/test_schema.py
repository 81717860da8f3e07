"""Issue 2: append-only generations, history partitions, migrations and the floor check."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.apps import apps
from django.core import checks
from django.db import connection
from psycopg import sql

from durable_schedule.store import sqlfiles
from tests.conftest import database_url
from tests.pgroles import refused
from tests.store.seed import seed_scope

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
@pytest.mark.parametrize("table", ["durable_schedule_generation", "durable_work_history",
                                   "durable_schedule_history"])
@pytest.mark.parametrize("statement", ["update {t} set scope_id = scope_id", "delete from {t}"])
def test_append_only__rows_cannot_be_updated_or_deleted_even_by_the_owner(pg, table, statement):
    with pg.cursor() as cur:
        seed_scope(cur, "tenant-a")
    err = refused(pg, statement.format(t=table))
    assert err is not None, f"{statement} on {table} was allowed"
    assert "append" in str(err).lower() or "cannot update or delete" in str(err).lower()


@pytest.mark.django_db
def test_partitions__function_is_idempotent_and_every_child_has_forced_rls_and_the_policy(pg):
    cur = pg.cursor()
    cur.execute("select ensure_schedule_history_partitions()")
    cur.execute("select ensure_schedule_history_partitions()")
    assert cur.fetchall() == []  # nothing new the second time
    cur.execute(
        """select c.relname, c.relrowsecurity, c.relforcerowsecurity,
                  (select array_agg(p.polname || '|' || pg_get_expr(p.polqual, p.polrelid)
                                    || '|' || pg_get_expr(p.polwithcheck, p.polrelid))
                     from pg_policy p where p.polrelid = c.oid)
             from pg_inherits i join pg_class c on c.oid = i.inhrelid
            where i.inhparent = 'durable_schedule_history'::regclass"""
    )
    children = cur.fetchall()
    assert len(children) >= 3  # default + current + next month
    for name, rls, force, policies in children:
        assert rls and force, name
        assert len(policies) == 1, (name, policies)
        polname, qual, check = policies[0].split("|", 2)
        assert polname == "durable_scope_isolation"
        expected = (
            "(scope_id = NULLIF(current_setting('durable_schedule.scope_id'::text, true),"
            " ''::text))"
        )
        assert qual == expected and check == expected, name
        cur.execute("select has_table_privilege('durable_runtime', %s, 'INSERT')", (name,))
        assert cur.fetchone()[0], name


@pytest.mark.django_db
def test_partitions__a_future_month_is_created_and_its_waiting_rows_moved_from_default(pg):
    cur = pg.cursor()
    cur.execute(
        "create or replace function durable_schedule_clock(kind text default 'clock')"
        " returns timestamptz language sql volatile as $$ select '2031-05-10'::timestamptz $$"
    )
    cur.execute("insert into durable_schedule_scope (scope_id) values ('tenant-a')")
    cur.execute(
        "insert into durable_schedule_history (scope_id, schedule_id, event, recorded_at)"
        " values ('tenant-a', 's', 'early', '2031-05-11')"
    )
    cur.execute("select count(*) from durable_schedule_history_default")
    assert cur.fetchone()[0] == 1
    cur.execute("select ensure_schedule_history_partitions()")
    assert sorted(r[0] for r in cur.fetchall()) == [
        "durable_schedule_history_203105", "durable_schedule_history_203106"
    ]
    cur.execute("select count(*) from durable_schedule_history_default")
    assert cur.fetchone()[0] == 0
    cur.execute("select event from durable_schedule_history_203105")
    assert cur.fetchall() == [("early",)]


@pytest.mark.django_db
def test_models__every_model_field_matches_a_live_column():
    with connection.cursor() as cur:
        for model in apps.get_app_config("durable_schedule").get_models():
            table = model._meta.db_table
            live = {c.name for c in connection.introspection.get_table_description(cur, table)}
            fields = {f.column for f in model._meta.concrete_fields}
            assert fields == live, (table, fields ^ live)


def test_sql_files__each_migration_file_is_used_by_exactly_one_migration():
    migrations = list((ROOT / "durable_schedule" / "migrations").glob("0*.py"))
    text = {m.name: m.read_text() for m in migrations}
    schema_files = [f for f in sqlfiles.available() if re.match(r"\d{4}_", f)]
    assert schema_files
    for sql_file in schema_files:
        pattern = rf'"{re.escape(sql_file)}"'
        users = [name for name, body in text.items() if re.search(pattern, body)]
        assert len(users) == 1, (sql_file, users)


def test_sql_files__query_files_are_never_run_by_a_migration():
    migrations = "".join(
        m.read_text() for m in (ROOT / "durable_schedule" / "migrations").glob("0*.py")
    )
    for sql_file in sqlfiles.available():
        if not re.match(r"\d{4}_", sql_file):
            assert sql_file not in migrations, sql_file


@pytest.mark.django_db
def test_check__flags_a_schema_below_the_compatibility_floor():
    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set compatibility_floor = 1, schema_version = 1")
    messages = [m for m in checks.run_checks() if m.id == "durable_schedule.E002"]
    assert messages and "DS401" in messages[0].msg


@pytest.mark.django_db
def test_check__flags_code_older_than_the_floor_the_store_demands():
    # A newer migration raised the floor (docs/protocol/work.md "Schema and release migration"):
    # this code must refuse to read or write the store, not guess at a schema it does not know.
    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = 99,"
                    " compatibility_floor = 99")
    messages = [m for m in checks.run_checks() if m.id == "durable_schedule.E002"]
    assert messages and "DS401" in messages[0].msg


@pytest.mark.django_db
def test_check__is_silent_on_a_healthy_store():
    ids = [m.id for m in checks.run_checks() if m.id.startswith("durable_schedule")]
    assert ids == []


@pytest.mark.django_db
def test_check__flags_a_missing_grant(pg):
    # The grant is revoked in the test's own transaction through Django's connection.
    with connection.cursor() as cur:
        cur.execute("revoke execute on function claim_schedule_dispatch(text, interval, integer)"
                    " from durable_dispatcher")
    messages = [m.msg for m in checks.run_checks() if m.id == "durable_schedule.E003"]
    assert any("lacks EXECUTE" in m for m in messages), messages


@pytest.mark.django_db(transaction=True)
def test_migrate__from_zero_on_an_empty_database():
    name = "ds_empty_" + uuid.uuid4().hex[:8]
    base = database_url()
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        url = base.rsplit("/", 1)[0] + "/" + name
        env = {"DATABASE_URL": url, "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "testproject/manage.py", "migrate", "--noinput"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # migrate cures "not migrated": it must not warn about it while doing so (issue 17).
        assert "durable_schedule.E001" not in done.stdout + done.stderr, done.stderr[-3000:]
        check = subprocess.run(
            [sys.executable, "testproject/manage.py", "check"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )
        assert check.returncode == 0, check.stderr[-3000:]
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "select schema_version, compatibility_floor, runtime_epoch"
                " from durable_schedule_store"
            ).fetchone()
            assert row[0] >= 1 and row[1] >= 1 and row[2] == 1
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(sql.SQL("drop database if exists {} with (force)").format(
                sql.Identifier(name)))
