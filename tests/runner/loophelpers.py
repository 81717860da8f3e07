"""Running the --loop commands as real subprocesses against the test database."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from django.db import connection

from tests.conftest import database_url

ROOT = Path(__file__).resolve().parents[2]


def start_loop(command: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    full_env = dict(os.environ, DATABASE_URL=database_url(), PYTHONUNBUFFERED="1")
    full_env.update(env or {})
    return subprocess.Popen(
        [sys.executable, "testproject/manage.py", command, "--loop", *args],
        cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def wait_until(predicate, *, timeout: float = 20.0, what: str = "condition"):
    """Poll the database (not protocol time) until ``predicate()`` is truthy; bounded."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def sql(query: str, params=()):
    """Run one statement in its own committed transaction; its rows (empty when none)."""
    with psycopg.connect(database_url(), autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def listening(channel: str) -> bool:
    rows = sql("select count(*) from pg_stat_activity where datname = current_database()"
               " and query = %s and state = 'idle'", (f"LISTEN {channel}",))
    return rows[0][0] > 0


def stop(proc: subprocess.Popen, sig=signal.SIGTERM, timeout: float = 20.0) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError("the loop did not stop within the timeout:\n" + out) from None
    return proc.returncode, out


def run_on(pool, fn):
    """Run ``fn`` as one job of a ``--concurrency`` pool (a slot thread) and hand back
    ``("ok", value)`` or ``("error", exception)``."""
    box: queue.SimpleQueue = queue.SimpleQueue()

    def job():
        try:
            box.put(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 -- handed to the test thread
            box.put(("error", exc))

    pool.submit(job)
    return box.get(timeout=60)


def backend_pid():
    """The backend pid of the calling thread's default connection."""
    with connection.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        return cur.fetchone()[0]


def effect_count(key: str) -> int:
    """Rows of ``demo_effect`` with ``key`` (the markers the runner targets write)."""
    return sql("select count(*) from demo_effect where key = %s", (key,))[0][0]


def effect_calls() -> dict:
    """Per Work: the attempts that started and the ones that did their work."""
    out: dict = {}
    for work_id, key, attempt in sql(
        "select work_id, key, attempt from demo_effect"
        " where key in ('started', 'effect') order by id"
    ):
        out.setdefault(work_id, {"started": [], "effect": []})[key].append(attempt)
    return out
