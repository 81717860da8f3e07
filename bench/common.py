"""Shared harness: bench databases, the clock seam, processes started behind a barrier, stats.

Every scenario runs against its own database, created from scratch by ``manage.py migrate`` once
per bench run (``ds_bench_tpl``) and then cloned with ``CREATE DATABASE ... TEMPLATE`` (a file
copy, about a second), so a round never sees another round's rows or dead tuples. All traffic
goes to the PostgreSQL named by ``DATABASE_URL`` (default 127.0.0.1:5432, user postgres).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
TESTPROJECT = ROOT / "testproject"
SQL_DIR = Path(__file__).resolve().parent / "sql"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/durable_schedule"
BASE_PREFIX = "ds_bench_"
#: One run's databases are ``ds_bench_<run id>_*`` (6 random hex digits): two runs at once (from
#: different sandboxes too) never touch each other's. Spawned children inherit the variable.
RUN_ID = os.environ.setdefault("DS_BENCH_RUN", secrets.token_hex(3))
PREFIX = f"{BASE_PREFIX}{RUN_ID}_"
#: A run holds the session advisory lock (LOCK_CLASS, run id) while it lives; a run whose lock
#: can be taken is gone, and its databases are dropped by the next run (liveness through
#: PostgreSQL, not through process ids, which another PID namespace cannot see).
LOCK_CLASS = 0x4453
TEMPLATE_DB = PREFIX + "tpl"
_NAME = re.compile(r"^-- name: (?P<name>[a-z0-9_ ]+?) --.*$", re.MULTILINE)


# ----------------------------------------------------------------- SQL files
def queries(filename: str) -> dict[str, str]:
    """The ``-- name: key --`` blocks of one file of bench/sql (the store's own layout)."""
    text = (SQL_DIR / filename).read_text(encoding="utf-8")
    marks = list(_NAME.finditer(text))
    out = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out[mark.group("name").strip().replace(" ", "_")] = text[mark.end() : end].strip()
    return out


# ----------------------------------------------------------------- databases
def base_url() -> str:
    return os.environ.get("DATABASE_URL") or DEFAULT_URL


def db_url(name: str, url: str | None = None) -> str:
    """``url`` (default DATABASE_URL) pointing at database ``name``."""
    parts = urlsplit(url or base_url())
    return urlunsplit(parts._replace(path="/" + name))


def admin_connect() -> psycopg.Connection:
    return psycopg.connect(db_url("postgres"), autocommit=True)


def drop_db(name: str) -> None:
    if not name.startswith(PREFIX):
        raise ValueError(f"refusing to drop {name!r}: not a database of this bench run")
    with admin_connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def create_db(name: str, template: str | None = None) -> str:
    """(Re)create bench database ``name``, empty or as a copy of ``template``; returns its URL."""
    drop_db(name)
    with admin_connect() as conn:
        tpl = f' TEMPLATE "{template}"' if template else ""
        conn.execute(f'CREATE DATABASE "{name}"{tpl}')
    return db_url(name)


def list_bench_dbs() -> list[str]:
    """This run's databases."""
    with admin_connect() as conn:
        rows = conn.execute(
            "select datname from pg_database where starts_with(datname, %s)", [PREFIX]
        ).fetchall()
    return [r[0] for r in rows]


def hold_run_lock() -> psycopg.Connection:
    """Take this run's advisory lock; keep the returned connection open for the whole run."""
    conn = admin_connect()
    conn.execute("select pg_advisory_lock(%s, %s)", [LOCK_CLASS, int(RUN_ID, 16)])
    return conn


def drop_stale_dbs(lock_conn: psycopg.Connection) -> None:
    """Drop the databases of earlier runs that are gone (a killed run leaves them behind)."""
    names = [r[0] for r in lock_conn.execute(
        "select datname from pg_database where starts_with(datname, %s)", [BASE_PREFIX]
    ).fetchall()]
    runs = {n[len(BASE_PREFIX):].split("_", 1)[0] for n in names}
    for run in sorted(r for r in runs if re.fullmatch(r"[0-9a-f]{6}", r) and r != RUN_ID):
        key = [LOCK_CLASS, int(run, 16)]
        if lock_conn.execute("select pg_try_advisory_lock(%s, %s)", key).fetchone()[0]:
            try:
                for name in names:
                    if name.startswith(f"{BASE_PREFIX}{run}_"):
                        lock_conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                lock_conn.execute("select pg_advisory_unlock(%s, %s)", key)


def django_env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DATABASE_URL"] = url
    env["DJANGO_SETTINGS_MODULE"] = "testproject.settings"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTPROJECT), env.get("PYTHONPATH", "")])
    return env


def migrated_template() -> str:
    """Create ``ds_bench_tpl`` from scratch with ``manage.py migrate``; returns its name."""
    url = create_db(TEMPLATE_DB)
    subprocess.run(
        [sys.executable, str(TESTPROJECT / "manage.py"), "migrate", "-v0", "--skip-checks"],
        env=django_env(url), check=True, cwd=str(ROOT), timeout=300,
        stdout=subprocess.DEVNULL,
    )
    return TEMPLATE_DB


def setup_django(url: str) -> None:
    """Configure Django in this process (a spawned child) against database ``url``."""
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "testproject.settings"
    for p in (str(ROOT), str(TESTPROJECT)):
        if p not in sys.path:
            sys.path.insert(0, p)
    import logging

    import django
    from django.conf import settings

    django.setup()
    if os.environ.get("BENCH_SERVER_SIDE_BINDING") == "1":
        # Experiment (docs/benchmarks.md): psycopg server-side binding with automatic prepared
        # statements (Django passes prepare_threshold=None, "never", unless OPTIONS names it),
        # so a repeated statement is parsed and planned once per connection.
        options = settings.DATABASES["default"].setdefault("OPTIONS", {})
        options.update(server_side_binding=True, prepare_threshold=5)
    if os.environ.get("BENCH_SCHEDULE_BATCH"):
        settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}),
                                     "SCHEDULE_BATCH": int(os.environ["BENCH_SCHEDULE_BATCH"])}
    # The runtime logs every pass at INFO; at bench rates that is console I/O we do not measure.
    logging.getLogger("durable_schedule").setLevel(logging.WARNING)


# ----------------------------------------------------------------- clock seam
_PRODUCTION_CLOCK = (
    "SELECT CASE kind WHEN 'transaction' THEN pg_catalog.transaction_timestamp() "
    "ELSE pg_catalog.clock_timestamp() END"
)


def set_clock(conn: psycopg.Connection, when: datetime | None) -> None:
    """Freeze the clock seam at ``when`` (as ``durable_schedule.testing.ControlledClock`` does),
    or restore the production body with None. Commits."""
    body = _PRODUCTION_CLOCK if when is None else f"SELECT '{when.isoformat()}'::timestamptz"
    conn.execute(
        "CREATE OR REPLACE FUNCTION durable_schedule_clock(kind text DEFAULT 'clock') "
        "RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE AS $clock$ "
        + body + " $clock$"
    )
    conn.commit()


# ----------------------------------------------------------------- processes
def run_processes(
    target: Callable[..., dict], args_list: Sequence[tuple], timeout: float
) -> list[dict]:
    """Run ``target(barrier, *args)`` in one spawned process per ``args``; collect their dicts.

    Each child sets itself up (imports, Django, connections), waits at the barrier, then does
    the measured work and returns ``{"count", "t0", "t1", ...}`` with ``time.monotonic()``
    stamps (one clock for the whole machine). A child that outlives ``timeout`` is killed.
    """
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(args_list))
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_child, args=(queue, target, barrier, args), daemon=True)
        for args in args_list
    ]
    for p in procs:
        p.start()
    results: list[dict] = []
    deadline = time.monotonic() + timeout
    while len(results) < len(procs) and time.monotonic() < deadline:
        try:
            results.append(queue.get(timeout=max(0.1, min(1.0, deadline - time.monotonic()))))
        except Exception:  # queue.Empty; a dead child is noticed below
            if not any(p.is_alive() for p in procs) and queue.empty():
                break
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise RuntimeError("bench child failed:\n" + "\n".join(errors))
    if len(results) != len(procs):
        raise RuntimeError(f"only {len(results)} of {len(procs)} bench children reported")
    return results


def _child(queue, target, barrier, args) -> None:
    import traceback

    try:
        queue.put(target(barrier, *args))
    except BaseException:
        queue.put({"error": traceback.format_exc()})


def combine(results: list[dict]) -> dict:
    """Total count over the wall time from the first start to the last finish."""
    count = sum(r["count"] for r in results)
    elapsed = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    return {"count": count, "elapsed": elapsed, "rate": count / elapsed if elapsed > 0 else 0.0}


# ----------------------------------------------------------------- stats
def summary(values: Sequence[float]) -> dict[str, Any]:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"n": 0, "min": None, "median": None, "max": None}
    return {"n": len(vals), "min": min(vals), "median": statistics.median(vals), "max": max(vals)}


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, round(p / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
