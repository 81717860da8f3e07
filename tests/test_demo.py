"""Issue 17 item 3 and the demo part of item 4: `make demo`'s script, run as a user runs it.

The demo creates a database of its own per run, drops only that one at the end (unless
DEMO_KEEP=1), refuses a name that already exists, says that it runs on a controlled database
clock, shows the Work state after each "->", a failure and its retry, and ends with what to read
next. The full story runs once; the database-lifecycle cases run only the database step.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import psycopg
import pytest
from django.conf import settings
from psycopg import sql

from tests.docs.snippets import ROOT


def server_url(dbname: str = "postgres") -> str:
    d = settings.DATABASES["default"]
    auth = d["USER"] + (f":{d['PASSWORD']}" if d["PASSWORD"] else "")
    return f"postgresql://{auth}@{d['HOST']}:{d['PORT']}/{dbname}"


def exists(name: str) -> bool:
    with psycopg.connect(server_url(), autocommit=True) as conn:
        return bool(conn.execute("select 1 from pg_database where datname = %s",
                                 (name,)).fetchone())


def drop(name: str) -> None:
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(
            sql.Identifier(name)))


def demo(**env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "DEMO_", "DURABLE_DEMO"))}
    full.update(DATABASE_URL=server_url("durable_schedule"), PYTHON=sys.executable, **env)
    return subprocess.run(["scripts/demo.sh"], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture
def name():
    value = f"demo_test_{os.getpid()}_{secrets.token_hex(3)}"
    yield value
    drop(value)


def test_demo__tells_the_story_in_its_own_database_and_drops_it():
    proc = demo()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    db = re.search(r"created database (durable_schedule_demo_\d+_[0-9a-f]{8}) ", out)
    assert db, out[:2000]
    assert f"dropped this run's database {db.group(1)}" in out
    assert not exists(db.group(1))
    # migrate does not warn "not migrated" while migrating.
    assert "E001" not in out
    assert "the demo runs on a controlled database clock" in out and "2030" in out
    # After "->": the Work and its state, never a schedule state.
    arrows = [line for line in out.splitlines() if " -> Work" in line]
    assert len(arrows) >= 6, out
    for line in arrows:
        assert re.search(r"-> Work [0-9a-f]{8} (pending|running|succeeded|failed|suspended|"
                         r"expired|canceled)\b", line), line
    assert re.search(r"attempt 1 failed \(.+\) -> Work [0-9a-f]{8} pending, next attempt due",
                     out), out
    assert re.search(r"attempt 2 -> Work [0-9a-f]{8} succeeded", out), out
    # What to read next: files that exist, the admin with the user it created, --loop.
    tail = out.split("what to read next", 1)[1]
    for path in re.findall(r"^\s+((?:scripts|testproject)/\S+)", tail, re.MULTILINE):
        assert (ROOT / path).is_file(), path
    assert "Superuser created successfully" in out
    assert re.search(r"user demo, password \S+\)", tail)
    assert "http://127.0.0.1:8000/admin/" in tail
    assert "process_schedules --loop" in tail and "process_work --loop" in tail
    assert "DEMO_KEEP=1" in tail


def test_demo__keeps_its_database_when_asked(name):
    proc = demo(DURABLE_DEMO_DB=name, DEMO_KEEP="1", DEMO_STEPS="database")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert exists(name)
    assert f"kept database {name}" in proc.stdout


def test_demo__never_touches_a_database_it_did_not_create(name):
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    proc = demo(DURABLE_DEMO_DB=name, DEMO_STEPS="database migrate")
    assert proc.returncode != 0
    assert "already exists and this run did not create it" in proc.stderr
    assert exists(name)
    assert "dropped this run" not in proc.stdout + proc.stderr


def test_demo__an_unknown_step_is_refused_before_anything_is_created(name):
    proc = demo(DURABLE_DEMO_DB=name, DEMO_STEPS="nonsense database")
    assert proc.returncode == 2
    assert "no step 'nonsense'" in proc.stderr and "story" in proc.stderr
    assert not exists(name)
