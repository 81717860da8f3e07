"""Issue 11 item 7: reversing any migration of the package raises Django's IrreversibleError,
saying why, and changes nothing (neither the schema nor django_migrations)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db.migrations.exceptions import IrreversibleError
from django.db.migrations.loader import MigrationLoader
from psycopg import sql

from tests.conftest import database_url

ROOT = Path(__file__).resolve().parents[2]

#: Everything a reverse migration could touch: objects of the schema and the recorder's rows.
_SNAPSHOT = """
select 'rel:' || c.relname || ':' || c.relkind::text from pg_class c
  join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema()
union all
select 'fn:' || p.oid::regprocedure::text || ':' || md5(p.prosrc) from pg_proc p
  join pg_namespace n on n.oid = p.pronamespace where n.nspname = current_schema()
union all
select 'pol:' || polrelid::regclass::text || ':' || polname from pg_policy
union all
select 'trg:' || tgrelid::regclass::text || ':' || tgname from pg_trigger where not tgisinternal
union all
select 'mig:' || app || ':' || name from django_migrations
union all
select 'store:' || schema_version || ':' || compatibility_floor from durable_schedule_store
order by 1
"""


def _manage(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {"DATABASE_URL": url, "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # run against the tree under test, not an installed copy
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run([sys.executable, "testproject/manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_forward_only__every_migration_of_the_package_ends_with_the_refusal():
    from durable_schedule.store.forward_only import RefuseReverse

    loader = MigrationLoader(None, ignore_no_migrations=True)
    ours = [m for (app, _), m in loader.disk_migrations.items() if app == "durable_schedule"]
    assert len(ours) >= 5
    for migration in ours:
        assert isinstance(migration.operations[-1], RefuseReverse), migration.name
        assert migration.operations[-1].migration_name == migration.name


def test_forward_only__the_error_is_djangos_irreversible_error_with_a_reason():
    from durable_schedule.errors import ForwardOnlyStore
    from durable_schedule.store.forward_only import RefuseReverse

    op = RefuseReverse("0002_work_runtime")
    with pytest.raises(IrreversibleError) as caught:
        op.database_backwards("durable_schedule", None, None, None)
    assert isinstance(caught.value, ForwardOnlyStore)
    text = str(caught.value)
    assert text.startswith("DS409:") and "forward-only" in text
    assert "durable_schedule.0002_work_runtime" in text and "Nothing was changed" in text


@pytest.mark.django_db(transaction=True)
def test_forward_only__migrate_back_to_0003_raises_and_changes_nothing():
    name = "ds_reverse_" + uuid.uuid4().hex[:8]
    base = database_url()
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        url = base.rsplit("/", 1)[0] + "/" + name
        done = _manage(url, "migrate", "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url) as conn:
            before = conn.execute(_SNAPSHOT).fetchall()
        assert any(r[0] == "mig:durable_schedule:0004_runner" for r in before)

        back = _manage(url, "migrate", "durable_schedule", "0003", "--noinput")
        assert back.returncode != 0
        assert "IrreversibleError" in back.stderr or "ForwardOnlyStore" in back.stderr
        assert "DS409" in back.stderr and "forward-only" in back.stderr
        with psycopg.connect(url) as conn:
            assert conn.execute(_SNAPSHOT).fetchall() == before

        # ... and the next migrate is a no-op, not "relation already exists".
        again = _manage(url, "migrate", "--noinput")
        assert again.returncode == 0, again.stderr[-3000:]
        assert "No migrations to apply" in again.stdout
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(sql.SQL("drop database if exists {} with (force)").format(
                sql.Identifier(name)))
