"""Helpers for acting as the real roles on a raw psycopg connection (RLS tests,
docs/protocol/index.md "Quality bars")."""

from __future__ import annotations

import psycopg
from psycopg import sql

RUNTIME = "durable_runtime"
DISPATCHER = "durable_dispatcher"


def become(cur, role: str, scope: str | None = None) -> None:
    """SET LOCAL ROLE and (optionally) the transaction-local scope, as the product does."""
    cur.execute(sql.SQL("set local role {}").format(sql.Identifier(role)))
    if scope is not None:
        cur.execute("select set_config('durable_schedule.scope_id', %s, true)", (scope,))


def refused(conn: psycopg.Connection, statement: str, params=()) -> psycopg.Error | None:
    """Run a statement in a savepoint; return the error it raised (None if it succeeded)."""
    try:
        with conn.transaction():
            conn.execute(statement, params)
    except psycopg.Error as exc:
        return exc
    return None
