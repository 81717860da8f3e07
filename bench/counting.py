"""Statements per item, counted the same way for every system: a psycopg hook.

``install()`` wraps ``execute``/``executemany`` of psycopg's sync and async cursor classes in this
(spawned, single-purpose) child process, so ours (through Django), Procrastinate and pgqueuer
(psycopg 3 connections both) are counted by one rule: one call = one statement sent. psycopg's
own BEGIN and COMMIT are not cursor calls and are not counted here; the transaction count comes
from the run database's ``pg_stat_database`` (``transactions()``), which each scenario owns.
pg_stat_statements would count on the server, but it needs ``shared_preload_libraries`` and a
restart, which a shared machine does not allow.
"""

from __future__ import annotations

import functools

import psycopg

_COUNT = [0]


def install() -> None:
    """Count every statement this process sends from now on (idempotent)."""
    for cls in (psycopg.Cursor, psycopg.AsyncCursor, psycopg.ClientCursor,
                psycopg.AsyncClientCursor, psycopg.RawCursor, psycopg.AsyncRawCursor):
        for name in ("execute", "executemany"):
            fn = cls.__dict__.get(name)
            if fn is None or getattr(fn, "_bench_counted", False):
                continue
            wrapped = _async_counter(fn) if cls.__name__.startswith("Async") else _counter(fn)
            wrapped._bench_counted = True
            setattr(cls, name, wrapped)


def _counter(fn):
    @functools.wraps(fn)
    def execute(self, *args, **kwargs):
        _COUNT[0] += 1
        return fn(self, *args, **kwargs)

    return execute


def _async_counter(fn):
    @functools.wraps(fn)
    async def execute(self, *args, **kwargs):
        _COUNT[0] += 1
        return await fn(self, *args, **kwargs)

    return execute


def count() -> int:
    return _COUNT[0]


def transactions(url: str) -> int:
    """Committed + rolled-back transactions of the database ``url`` names, so far."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select pg_stat_clear_snapshot()")
        return conn.execute(
            "select xact_commit + xact_rollback from pg_stat_database"
            " where datname = current_database()").fetchone()[0]
