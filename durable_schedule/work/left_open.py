"""Transactions an executor or reconciler leaves open on its thread's connections
(docs/work.md "Execution", DS285): found and rolled back right after the call, so they never
swallow the worker's own next transactions on that connection."""

from __future__ import annotations

import logging

from django.db import connections

from durable_schedule.errors import TransactionLeftOpen

log = logging.getLogger("durable_schedule.work")


def open_transactions() -> dict[str, tuple[int, bool]]:
    """Per connection this thread opened: (atomic depth, a transaction begun outside any
    atomic block by turning autocommit off)."""
    return {conn.alias: (len(conn.atomic_blocks), _manual_transaction(conn))
            for conn in connections.all(initialized_only=True)}


def _manual_transaction(conn) -> bool:
    return conn.connection is not None and not conn.in_atomic_block and not conn.autocommit


def roll_back_left_open(before: dict[str, tuple[int, bool]]) -> list[str]:
    """Roll back what a synchronous executor (or reconciler) left open on this thread's
    connections, and return their aliases. Left open, the transaction would swallow the
    worker's next ones on that connection: with ``concurrency=1`` the group commit of the
    batch's outcomes (and the next admissions), never committed; in a slot thread the next
    executors' work, holding its locks for ever. Never commits what the executor did not."""
    left = []
    for conn in connections.all(initialized_only=True):
        depth, manual = before.get(conn.alias, (0, False))
        if len(conn.atomic_blocks) <= depth and (manual or not _manual_transaction(conn)):
            continue
        left.append(conn.alias)
        try:
            while len(conn.atomic_blocks) > depth:  # innermost first, as their exits would
                conn.atomic_blocks[-1].__exit__(TransactionLeftOpen, None, None)
            if not manual and _manual_transaction(conn):
                conn.rollback()
                conn.set_autocommit(True)
        except Exception:  # noqa: BLE001 -- a connection that cannot roll back is dropped
            log.warning("could not roll back the transaction left open on %r", conn.alias,
                        exc_info=True)
            _drop(conn, depth)
    return left


def _drop(conn, depth: int) -> None:
    """Close a connection whose left-open transaction could not be rolled back (the server
    rolls it back); Django reconnects on next use."""
    del conn.atomic_blocks[depth:]
    if depth == 0:
        conn.in_atomic_block = False
        conn.savepoint_ids.clear()
        conn.needs_rollback = False
    conn.close()


def roll_back_any_left_open() -> list[str]:
    """In the thread the async executors' ORM calls run on (``sync_to_async``,
    thread-sensitive): between two such calls no transaction is open, so any is left over."""
    return roll_back_left_open({})
