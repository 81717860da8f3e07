"""The two transaction forms of the protocol (spec 000 "Transactions, security, and target bridge").

1. ``dispatcher_transaction()``: the trusted dispatcher claims payload-free dispatch rows under a
   lease and commits before anything reads scoped data. It runs as ``durable_dispatcher``.
2. ``scoped(scope_id)``: a runtime block that proves ``current_user`` is ``durable_runtime`` and
   then sets the transaction-local scope, so row-level security admits exactly that scope.

Both use ``SET LOCAL`` / ``set_config(..., true)``: nothing ``durable_schedule.*`` ever exists at
session level, so a pooled connection (PgBouncer) cannot leak a scope to the next transaction
(DESIGN §3). ``scoped`` nests inside a caller's ``transaction.atomic()``: it opens a savepoint,
switches role and scope, and on the way out restores the caller's role and scope, so the
caller's next ORM query runs exactly as before (issue 3 "Enqueue leaves the caller's
transaction as it found it"). An exception rolls the savepoint back, which undoes the role and
scope changes too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections, transaction

from durable_schedule import conf
from durable_schedule.errors import InvalidScope, ScopeLost, WrongRole
from durable_schedule.store.inspection import DISPATCHER_ROLE, RUNTIME_ROLE

SCOPE_SETTING = "durable_schedule.scope_id"
ROUTING_SETTING = "durable_schedule.routing_id"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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


@contextmanager
def scoped(scope_id: str, *, using: str | None = None) -> Iterator[object]:
    """Run the block as ``durable_runtime`` with the local scope set; yields a raw cursor.

    Creates the scope row on first use (its routing id and generation are needed by dispatch
    rows and fences). Restores the caller's role and scope on exit.
    """
    validate_scope_id(scope_id)
    conn = connection(using)
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        cur.execute(
            "select current_user, coalesce(current_setting(%s, true), '')", [SCOPE_SETTING]
        )
        previous_role, previous_scope = cur.fetchone()
        _enter_runtime(cur, scope_id)
        yield cur
        _assert_scope(cur, scope_id)
        cur.execute("select set_config(%s, %s, true)", [SCOPE_SETTING, previous_scope])
        _set_role(cur, previous_role)


def _enter_runtime(cur, scope_id: str) -> None:
    _set_role(cur, RUNTIME_ROLE)
    _set_scope_after_proving_role(cur, scope_id)
    cur.execute(
        "insert into durable_schedule_scope (scope_id) values (%s) on conflict do nothing",
        [scope_id],
    )


def _set_scope_after_proving_role(cur, scope_id: str) -> None:
    """Prove the role before setting scope state (DESIGN §4.7): one statement sets the scope only
    when current_user is the runtime role, so a connection that could not become it sees none."""
    cur.execute(_PROVE_ROLE_AND_SET_SCOPE, [RUNTIME_ROLE, SCOPE_SETTING, scope_id])
    user, _ = cur.fetchone()
    if user != RUNTIME_ROLE:
        raise WrongRole(f"scoped work must run as {RUNTIME_ROLE}, current_user is {user}")


_PROVE_ROLE_AND_SET_SCOPE = (
    "select current_user, case when current_user = %s then set_config(%s, %s, true) end"
)


def _assert_scope(cur, scope_id: str) -> None:
    """A savepoint rolled back inside the block would silently drop the scope: refuse that."""
    cur.execute("select current_user, current_setting(%s, true)", [SCOPE_SETTING])
    user, current = cur.fetchone()
    if user != RUNTIME_ROLE or current != scope_id:
        raise ScopeLost("the scope or role changed inside a scoped block", scope=scope_id)


def _set_role(cur, role: str) -> None:
    from psycopg import sql

    cur.execute(sql.SQL("set local role {}").format(sql.Identifier(role)))


@contextmanager
def dispatcher_transaction(*, using: str | None = None) -> Iterator[object]:
    """The claim transaction: its own outermost transaction as ``durable_dispatcher``.

    ``durable=True`` makes Django refuse to run it inside a caller's atomic block, so the claim
    always commits before scoped data is read (spec 000, transaction form 1).
    """
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), conn.cursor() as cur:
        _set_role(cur, DISPATCHER_ROLE)
        cur.execute("select current_user")
        user = cur.fetchone()[0]
        if user != DISPATCHER_ROLE:
            raise WrongRole(f"claims must run as {DISPATCHER_ROLE}, current_user is {user}")
        yield cur


def scope_for_routing_id(cur, routing_id: int) -> str | None:
    """The scope id behind a claimed row's opaque routing id, read as the runtime role.

    The scope table's lookup policy admits only the row named by the transaction-local routing
    setting; the setting is cleared again before the caller sets a scope.
    """
    cur.execute("select current_user")
    if cur.fetchone()[0] != RUNTIME_ROLE:
        raise WrongRole(f"routing lookups run as {RUNTIME_ROLE}")
    cur.execute("select set_config(%s, %s, true)", [ROUTING_SETTING, str(int(routing_id))])
    cur.execute("select scope_id from durable_schedule_scope where routing_id = %s", [routing_id])
    row = cur.fetchone()
    cur.execute("select set_config(%s, '', true)", [ROUTING_SETTING])
    return row[0] if row else None


@contextmanager
def routed(routing_id: int, *, using: str | None = None) -> Iterator[tuple[object, str | None]]:
    """A scoped runtime transaction for a claimed row: its own outermost transaction.

    Yields ``(cursor, scope_id)``; ``scope_id`` is None when the routing id names no scope the
    runtime may see, and then no scope is set. ``durable=True``: the processor's decision
    commits on its own and is never folded into someone else's transaction.
    """
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), conn.cursor() as cur:
        _set_role(cur, RUNTIME_ROLE)
        scope_id = scope_for_routing_id(cur, routing_id)
        if scope_id is not None:
            _set_scope_after_proving_role(cur, scope_id)
        yield cur, scope_id


@contextmanager
def runtime_transaction(*, using: str | None = None) -> Iterator[object]:
    """An outermost transaction as ``durable_runtime`` with no scope (e.g. Work claims)."""
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), conn.cursor() as cur:
        _set_role(cur, RUNTIME_ROLE)
        yield cur
