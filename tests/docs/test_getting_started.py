"""docs/getting-started.md is executed, snippet by snippet, in a brand-new project and database.

The walk-through does what a newcomer does: ``django-admin startproject``, ``startapp``, the
settings and ``work.py`` the page shows, the SQL that creates the database user, ``migrate``,
the shell snippets, the two ``--loop`` runners, the bounded passes, ``durable_status``,
``createsuperuser`` and the admin through ``runserver``. Only the database connection is
redirected: the page's role and database ``mysite`` get a name unique to this run (the server
is shared), and both are dropped at the end.

Protocol time is controlled through the clock seam (set as the superuser on the scratch
database), so the 24-hour schedule becomes due without waiting. Every snippet kind must be one
this test knows how to run: a new kind of snippet fails here until the test executes it.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.parse
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from psycopg import sql

from tests.docs.snippets import ROOT, Snippet, snippets

PAGE = ROOT / "docs" / "getting-started.md"
SHELL_TITLE = "python manage.py shell"
FILE_TITLES = ("mysite/settings.py", "reports/work.py")


def page_snippets() -> list[Snippet]:
    found = snippets(PAGE)
    assert found, "docs/getting-started.md has no snippets"
    return found


def test_getting_started__every_snippet_is_of_a_kind_this_test_runs():
    for s in page_snippets():
        where = s.where("docs/getting-started.md")
        if s.lang == "python":
            assert s.title in FILE_TITLES + (SHELL_TITLE,), where
        elif s.lang == "sql":
            assert s.title == "", where
        elif s.lang == "sh":
            for words in s.commands():
                words = [w for w in words if not re.fullmatch(r"[A-Z_]+=.*", w)]
                assert (words[:2] == ["pip", "install"] or words[0] in ("django-admin", "cd")
                        or words[:2] == ["python", "manage.py"]), (where, words)
        else:
            raise AssertionError(f"{where}: no test runs {s.lang!r} snippets")


def test_getting_started__pip_install_names_this_package_and_its_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installs = [w for s in page_snippets() if s.lang == "sh" for w in s.commands()
                if w[:2] == ["pip", "install"]]
    assert installs
    for words in installs:
        # A checkout's folder with extras (./durable_schedule[binary]): the folder is this
        # repository, whose package and extras must be the ones the page names.
        m = re.fullmatch(r"\./([\w-]+)(?:\[([\w,]+)\])?", words[2])
        assert m, words
        assert m.group(1) == "durable_schedule", words
        assert set(filter(None, (m.group(2) or "").split(","))) <= set(
            project["optional-dependencies"]), words
    page = PAGE.read_text()
    assert f"`{project['name']}`" in page
    assert "psycopg[binary]>=3.1" in project["optional-dependencies"]["binary"]


# ---------------------------------------------------------------- the walk-through
def _server() -> dict:
    d = settings.DATABASES["default"]
    return {"host": d["HOST"], "port": d["PORT"], "user": d["USER"], "password": d["PASSWORD"]}


def _connect(dbname: str, **kwargs) -> psycopg.Connection:
    return psycopg.connect(dbname=dbname, autocommit=True, connect_timeout=10,
                           **(_server() | kwargs))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, what: str, timeout: float = 60.0, fail: bool = True):
    """Poll (not protocol time) until ``predicate()`` is truthy; bounded, never a timing claim."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    if not fail:
        return None
    raise AssertionError(f"timed out waiting for {what}")


class Newcomer:
    """Runs the page's snippets in order, in a temporary directory, like a reader would."""

    def __init__(self, tmp: Path, name: str) -> None:
        self.cwd = tmp
        self.name = name
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("DJANGO_", "DURABLE_", "DATABASE_URL"))}
        self.env["PYTHONUNBUFFERED"] = "1"
        self.outputs: list[str] = []
        self.shell_runs = 0
        self.loops_ran = False
        self.start: datetime | None = None

    # -- helpers
    def run(self, words: list[str], *, ok=(0,)) -> str:
        env = dict(self.env)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        if words[0] == "python":
            words = [sys.executable, *words[1:]]
        elif words[0] == "django-admin":
            words = [sys.executable, "-m", "django", *words[1:]]
        proc = subprocess.run(words, cwd=self.cwd, env=env, capture_output=True, text=True,
                              timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode in ok, f"{words} exited {proc.returncode}:\n{out}"
        self.outputs.append(out)
        return out

    def sql(self, query, params=()):
        with _connect(self.name) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []

    def set_clock(self, when: datetime) -> None:
        # The clock seam, as in durable_schedule.testing.ControlledClock, on the scratch database.
        self.sql("CREATE OR REPLACE FUNCTION durable_schedule_clock(kind text DEFAULT 'clock') "
                 "RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE AS "
                 f"$clock$ SELECT '{when.isoformat()}'::timestamptz $clock$")

    def succeeded(self) -> int:
        return self.sql("select count(*) from durable_work where state = 'succeeded'")[0][0]

    # -- snippet kinds
    def python(self, s: Snippet) -> None:
        if s.title == SHELL_TITLE:
            if self.shell_runs == 0:
                # Today (so the history partitions migrate created cover it), held still.
                self.start = self.sql("select date_trunc('second', now())")[0][0]
                self.set_clock(self.start)
            self.shell_runs += 1
            self.run(["python", "manage.py", "shell", "-c", s.body])
            return
        path = self.cwd / s.title
        if s.title.endswith("settings.py"):
            connection = {"NAME": self.name, "USER": self.name, "PASSWORD": "change-me",
                          "HOST": _server()["host"], "PORT": str(_server()["port"])}
            override = f"\n# the test's server\nDATABASES['default'].update({connection!r})\n"
            path.write_text(path.read_text() + "\n" + s.body + override)
        else:
            path.write_text(s.body)

    def sql_block(self, s: Snippet) -> None:
        # The page's role and database, under this run's unique name.
        assert "mysite" in s.body
        with _connect("postgres") as conn:
            for statement in filter(str.strip, s.body.split(";")):
                conn.execute(statement.replace("mysite", self.name))
            # The page's PostgreSQL 16+ note: the roles are cluster-wide and already exist on
            # this shared server (other databases created them), so a CREATEROLE user cannot
            # join them; the DBA runs the GRANT the page gives, once.
            version = conn.execute("show server_version_num").fetchone()[0]
            existing = conn.execute(
                "select count(*) from pg_roles where rolname in "
                "('durable_runtime', 'durable_dispatcher')").fetchone()[0]
            if int(version) >= 160000 and existing == 2:
                assert "GRANT durable_runtime, durable_dispatcher TO mysite;" in PAGE.read_text()
                conn.execute(sql.SQL("GRANT durable_runtime, durable_dispatcher TO {}").format(
                    sql.Identifier(self.name)))

    def sh(self, s: Snippet) -> None:
        commands = s.commands()
        if any("--loop" in words for words in commands):
            return self.loops(commands)
        for words in commands:
            if words[:2] == ["pip", "install"]:
                continue  # the package is installed; test_..._pip_install checks the line
            if words[0] == "cd":
                self.cwd = self.cwd / words[1]
            elif "runserver" in words:
                self.admin(words)
            elif "durable_status" in words:
                # Before migrate it reports the unmigrated store (exit 2); afterwards healthy.
                migrated = (self.cwd / "manage.py").exists() and self.migrated()
                out = self.run(words, ok=(0,) if migrated else (2,))
                if "--roles" in words:
                    assert "CREATE ROLE durable_runtime NOLOGIN" in out
            else:
                self.run(words)

    def migrated(self) -> bool:
        return bool(self.sql("select to_regclass('durable_work') is not null")[0][0])

    def loops(self, commands: list[list[str]]) -> None:
        procs = []
        for words in commands:
            assert words[-1] == "--loop" and words[:2] == ["python", "manage.py"], words
            procs.append(subprocess.Popen([sys.executable, *words[1:]], cwd=self.cwd,
                                          env=self.env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        def succeeded(n):
            return lambda: self.succeeded() == n or any(p.poll() is not None for p in procs)

        try:
            # The Work enqueued in the shell runs now; a day later the schedule's Work runs
            # (the database clock moves the day: protocol time is never waited for).
            done = _wait(succeeded(1), "the worker to execute the enqueued Work", fail=False)
            if done and self.succeeded() == 1:
                self.set_clock(self.start + timedelta(hours=24))
                done = _wait(succeeded(2), "the runners to execute the schedule's Work",
                             fail=False)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            outs = [p.communicate(timeout=60)[0] for p in procs]
        work = self.sql("select work_name, state, last_error from durable_work")
        assert done and self.succeeded() == 2, (work, outs)
        for p, out in zip(procs, outs, strict=True):
            assert p.returncode == 0, out
        self.loops_ran = True

    def admin(self, words: list[str]) -> None:
        port = _free_port()
        server = subprocess.Popen([sys.executable, *words[1:], f"127.0.0.1:{port}", "--noreload"],
                                  cwd=self.cwd, env=self.env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

            def up():
                try:
                    return opener.open(base + "/admin/login/", timeout=5).read().decode()
                except OSError:
                    return None

            login = _wait(up, "runserver to answer")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login).group(1)
            form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "admin",
                                           "password": "change-me",
                                           "next": "/admin/durable_schedule/"}).encode()
            request = urllib.request.Request(base + "/admin/login/", data=form,
                                             headers={"Referer": base + "/admin/login/"})
            index = opener.open(request, timeout=30).read().decode()
            assert "Durable schedule" in index, index[:2000]
            schedules = opener.open(base + "/admin/durable_schedule/", timeout=30).read().decode()
            page = re.search(r'href="(/admin/durable_schedule/[a-z]*definition[a-z]*/)"',
                             schedules)
            assert page, schedules[:2000]
            listing = opener.open(base + page.group(1), timeout=30).read().decode()
            assert "Choose a scope" in listing  # RLS binds a non-superuser: one scope at a time
            listing = opener.open(base + page.group(1) + "?scope=main", timeout=30).read()
            assert b"daily-summary" in listing
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


@pytest.fixture
def newcomer(tmp_path):
    name = f"gs_{os.getpid()}_{secrets.token_hex(3)}"
    yield Newcomer(tmp_path, name)
    with _connect("postgres") as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(
            sql.Identifier(name)))
        conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(name)))


def test_getting_started__the_page_runs_from_startproject_to_the_admin(newcomer):
    for s in page_snippets():
        {"python": newcomer.python, "sql": newcomer.sql_block, "sh": newcomer.sh}[s.lang](s)
    assert newcomer.loops_ran and newcomer.shell_runs == 2
    shell_out = "\n".join(o for o in newcomer.outputs if "next due" in o)
    due = newcomer.start + timedelta(hours=24)
    assert f"daily-summary active next due {due}" in shell_out, shell_out
    assert shell_out.count("reports.daily_summary succeeded") == 2, shell_out
    # The scope is the page's DEFAULT_SCOPE, nothing else.
    assert newcomer.sql("select distinct scope_id from durable_work") == [("main",)]
