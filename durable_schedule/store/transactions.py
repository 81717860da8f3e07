"""The two transaction forms of the protocol (spec 000 "Transactions, security, and target bridge").

1. ``dispatcher_transaction()``: the trusted dispatcher claims payload-free dispatch rows under a
   lease and commits before anything reads scoped data. It runs as ``durable_dispatcher``.
2. ``scoped(scope_id)`` / ``routed(routing_id)``: a runtime block that proves ``current_user``
   is ``durable_runtime`` and then sets the transaction-local scope, so row-level security
   admits exactly that scope.

Both use ``SET LOCAL`` / ``set_config(..., true)``: nothing ``durable_schedule.*`` ever exists at
session level, so a pooled connection (PgBouncer) cannot leak a scope to the next transaction
(DESIGN §3). ``scoped`` nests inside a caller's ``transaction.atomic()``: it opens a savepoint,
switches role and scope, and on the way out restores the caller's role and scope, so the
caller's next ORM query runs exactly as before (issue 3 "Enqueue leaves the caller's
transaction as it found it"). An exception rolls the savepoint back, which undoes the role and
scope changes too.

The role switch, the proof and the scope are one round trip each way: the SQL functions
``durable_schedule_enter_scope``, ``durable_schedule_leave_scope`` and
``durable_schedule_enter_routed`` (store/sql/0002_security.sql) do them with
``set_config('role', ...)``, which is ``SET LOCAL ROLE``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connections, transaction

from durable_schedule import conf
from durable_schedule.errors import InvalidScope, ScopeLost, WrongRole
from durable_schedule.store.inspection import DISPATCHER_ROLE, RUNTIME_ROLE

SCOPE_SETTING = "durable_schedule.scope_id"
ROUTING_SETTING = "durable_schedule.routing_id"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

_ENTER_SCOPE = "select * from durable_schedule_enter_scope(%s)"
_LEAVE_SCOPE = "select durable_schedule_leave_scope(%s, %s, %s)"
_ENTER_ROUTED = "select durable_schedule_enter_routed(%s)"
_LEAVE_NESTED = "select set_config(%s, '', true), set_config('role', %s, true)"
_ENTER_DISPATCHER = "select set_config('role', %s, true)"


def validate_scope_id(scope_id: object) -> str:
    """A scope id is 1-200 characters, no control characters, no surrounding spaces (DS301)."""
    if not isinstance(scope_id, str):
        raise InvalidScope("scope must be a string", scope=scope_id)
    if not scope_id or len(scope_id) > 200 or scope_id != scope_id.strip():
        raise InvalidScope("scope must be 1-200 characters without surrounding spaces",
                           scope=scope_id)
    if _CONTROL.search(scope_id):
        raise InvalidScope("scope must not contain control characters", scope=scope_id)
    return scope_id


def connection(using: str | None = None):
    return connections[using or conf.database_alias()]


def _wrong_role(exc: DatabaseError) -> WrongRole | None:
    return WrongRole(str(exc).split("\n")[0]) if "DS302" in str(exc) else None


@contextmanager
def scoped(scope_id: str, *, using: str | None = None) -> Iterator[object]:
    """Run the block as ``durable_runtime`` with the local scope set; yields a raw cursor.

    Creates the scope row on first use (its routing id and generation are needed by dispatch
    rows and fences). Restores the caller's role and scope on exit; a savepoint rolled back
    inside the block that dropped the scope or role is refused with ScopeLost (DS305).
    """
    validate_scope_id(scope_id)
    conn = connection(using)
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        try:
            cur.execute(_ENTER_SCOPE, [scope_id])
        except DatabaseError as exc:
            raise (_wrong_role(exc) or exc) from exc
        previous_role, previous_scope = cur.fetchone()
        yield cur
        try:
            cur.execute(_LEAVE_SCOPE, [scope_id, previous_role, previous_scope])
        except DatabaseError as exc:
            if "DS305" in str(exc):
                raise ScopeLost("the scope or role changed inside a scoped block",
                                scope=scope_id) from exc
            raise


@contextmanager
def routed(routing_id: int, *, using: str | None = None) -> Iterator[tuple[object, str | None]]:
    """A scoped runtime transaction for a claimed row: its own outermost transaction.

    Yields ``(cursor, scope_id)``; ``scope_id`` is None when the routing id names no scope the
    runtime may see, and then no scope is set. ``durable=True``: the processor's decision
    commits on its own and is never folded into someone else's transaction. The scope table's
    routing lookup policy admits only the row named by the transaction-local routing setting,
    which ``durable_schedule_enter_routed`` sets and clears around its one read.
    """
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), conn.cursor() as cur:
        nested = _previous_role_if_nested(conn, cur)
        try:
            cur.execute(_ENTER_ROUTED, [int(routing_id)])
        except DatabaseError as exc:
            raise (_wrong_role(exc) or exc) from exc
        scope_id = cur.fetchone()[0]
        yield cur, scope_id
        _leave_if_nested(cur, nested)


@contextmanager
def runtime_transaction(*, using: str | None = None) -> Iterator[object]:
    """An outermost transaction as ``durable_runtime`` with no scope (e.g. Work claims)."""
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), conn.cursor() as cur:
        nested = _previous_role_if_nested(conn, cur)
        _set_role(cur, RUNTIME_ROLE)
        yield cur
        _leave_if_nested(cur, nested)


@contextmanager
def dispatcher_transaction(*, using: str | None = None) -> Iterator[object]:
    """The claim transaction: its own outermost transaction as ``durable_dispatcher``.

    ``durable=True`` makes Django refuse to run it inside a caller's atomic block, so the claim
    always commits before scoped data is read (spec 000, transaction form 1).
    """
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), conn.cursor() as cur:
        nested = _previous_role_if_nested(conn, cur)
        _set_role(cur, DISPATCHER_ROLE)
        yield cur
        _leave_if_nested(cur, nested)


def _set_role(cur, role: str) -> None:
    """SET LOCAL ROLE, then prove it took (one statement: set_config returns the new role only
    when the switch succeeded; a failure raises)."""
    cur.execute(_ENTER_DISPATCHER + ", current_user", [role])
    _, user = cur.fetchone()
    if user != role:
        raise WrongRole(f"expected to run as {role}, current_user is {user}")


def _previous_role_if_nested(conn, cur) -> str | None:
    """The durable forms are outermost in production, and their commit ends SET LOCAL. Inside a
    caller's transaction (a test suite's, in practice) a released savepoint keeps SET LOCAL
    ROLE: remember the role so the block can restore it on the way out."""
    if conn.savepoint_ids:
        cur.execute("select current_user")
        return cur.fetchone()[0]
    return None


def _leave_if_nested(cur, previous_role: str | None) -> None:
    if previous_role is not None:
        cur.execute(_LEAVE_NESTED, [SCOPE_SETTING, previous_role])
