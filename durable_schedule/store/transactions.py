"""The two transaction forms of the protocol (docs/protocol/schedules.md "Transactions, security,
and target bridge").

1. ``dispatcher_transaction()``: the trusted dispatcher claims payload-free dispatch rows under a
   lease and commits before anything reads scoped data. It runs as ``durable_dispatcher``.
2. ``scoped(scope_id)`` / ``routed(routing_id)``: a runtime block that proves ``current_user``
   is ``durable_runtime`` and then sets the transaction-local scope, so row-level security
   admits exactly that scope.

Both use ``SET LOCAL`` / ``set_config(..., true)``: nothing ``durable_schedule.*`` ever exists at
session level, so a pooled connection (PgBouncer) cannot leak a scope to the next transaction
(docs/protocol/storage.md). ``scoped`` nests inside a caller's ``transaction.atomic()``: it opens a
savepoint, switches role and scope, and on the way out restores the caller's role and scope, so the
caller's next ORM query runs exactly as before (issue 3 "Enqueue leaves the caller's
transaction as it found it"). An exception rolls the savepoint back, which undoes the role and
scope changes too.

The role switch, the proof and the scope are one round trip each way: the SQL functions
``durable_schedule_enter_scope``, ``durable_schedule_leave_scope`` and
``durable_schedule_enter_routed`` (store/sql/0002_security.sql) do them with
``set_config('role', ...)``, which is ``SET LOCAL ROLE``.

Prepared statements (docs/operations.md "Prepared statements and connection poolers"): the
cursor these forms yield executes on the underlying psycopg connection with server-side binding
and ``prepare=True``, whatever the project's ``DATABASES`` options say, so the long named
queries are parsed and planned once per connection. It is still a Django cursor wrapper around
the same connection and transaction: Django's error translation, ``execute_wrapper`` hooks,
query logging and the connection's adapters (jsonb as text) apply as before; timestamptz is
loaded to the value Django's loader gives, by psycopg's C parser where it is installed
(store/timestamps.py). ``DURABLE_SCHEDULE["PREPARE_STATEMENTS"] = False`` yields Django's own
cursor instead (client-side binding unless the project configured otherwise).

Pipelines: ``routed_pipelined`` and ``dispatcher_transaction(first=...)`` send their first
statements with the scope entry or role switch in one psycopg pipeline (one round trip for all
of them); with Django's own cursor they run one after the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import NoReturn

import psycopg
from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.transaction import TransactionManagementError
from psycopg.postgres import types as _pg_types
from psycopg.pq import Format

from durable_schedule import conf
from durable_schedule.errors import (
    InvalidArgument,
    InvalidScope,
    NotStoreOwner,
    PoolerDropsPreparedStatements,
    SchemaMissing,
    ScopeLost,
    TimeZoneSupportOff,
    TransactionAborted,
    WrongRole,
)
from durable_schedule.store import arrays, identifiers, timestamps
from durable_schedule.store.inspection import DISPATCHER_ROLE, RUNTIME_ROLE

SCOPE_SETTING = "durable_schedule.scope_id"
ROUTING_SETTING = "durable_schedule.routing_id"

_ENTER_SCOPE = "select * from durable_schedule_enter_scope(%s)"
_ENTER_SCOPE_TO_READ = "select * from durable_schedule_enter_scope_to_read(%s)"
_LEAVE_SCOPE = "select durable_schedule_leave_scope(%s, %s, %s)"
_ENTER_ROUTED = "select durable_schedule_enter_routed(%s)"
_LEAVE_NESTED = "select set_config(%s, '', true), set_config('role', %s, true)"
_ENTER_DISPATCHER = "select set_config('role', %s, true)"


def validate_scope_id(scope_id: object) -> str:
    """A scope id is 1-200 characters, no surrounding spaces, and follows the identifier rule
    (store/identifiers.py: no control, format or separator characters, not blank) (DS301)."""
    if not isinstance(scope_id, str):
        raise InvalidScope("scope must be a string", scope=scope_id)
    if not scope_id or len(scope_id) > 200 or scope_id != scope_id.strip():
        raise InvalidScope("scope must be 1-200 characters without surrounding spaces",
                           scope=scope_id)
    bad = identifiers.problem(scope_id)
    if bad is not None:  # the one identifier rule (store/identifiers.py)
        raise InvalidScope(f"scope {bad}", scope=scope_id)
    return scope_id


def connection(using: str | None = None):
    """The Django connection of ``using`` (None: ``DURABLE_SCHEDULE['DATABASE']``). An alias
    that ``DATABASES`` does not name, or one that is not a string, is refused with DS406 before
    anything is sent: Django's ``ConnectionDoesNotExist`` (or a ``TypeError`` for a number) was
    no DS error.

    Every transaction form starts here, so this is where USE_TZ = False is refused (DS450)
    before any transaction is entered or statement sent: the connection would read naive local
    times the runtime cannot compare, and Work it accepted could never run (system check
    ``durable_schedule.E450``)."""
    if not settings.USE_TZ:
        raise TimeZoneSupportOff("durable_schedule needs USE_TZ = True; nothing was written")
    if using is None or using == "":
        return _usable(connections[conf.database_alias()])
    if type(using) is not str or using not in connections.settings:
        raise InvalidArgument("using must name a database alias of DATABASES",
                              got=repr(using)[:80])
    return _usable(connections[using])


def _usable(conn):
    """``conn``, its psycopg connection dropped first when the server ended the session (a
    terminated backend, a restart, a failover) and no transaction of the caller is open on it.

    Django closes a broken connection only at a request's boundaries (or when a rollback fails):
    outside a request (a worker, a shell, a management command) every later statement in
    autocommit mode met ``the connection is lost`` forever, this package's kept statement cursor
    included. psycopg knows without a round trip (``closed``, ``broken``). Inside a caller's
    atomic block the transaction is gone with the session: that block must fail, so the
    connection is left as it is."""
    pg = conn.connection
    if (pg is not None and not conn.in_atomic_block
            and (getattr(pg, "closed", False) or getattr(pg, "broken", False))):
        conn.close()
    return conn


_TIMESTAMPTZ_OID = _pg_types["timestamptz"].oid
#: psycopg ignores ``prepare=True`` on a connection whose ``prepare_threshold`` is None (Django's
#: default): such a connection gets a threshold no statement reaches, so only the statements
#: executed with ``prepare=True`` are prepared and everything else runs as before.
_ONLY_WHEN_ASKED = 2**62


class _LoggedQuery:
    __slots__ = ("query",)

    def __init__(self, query: bytes | None) -> None:
        self.query = query


class _PreparingCursor:
    """A plain ``psycopg.Cursor`` (server-side binding) that prepares every statement it runs.

    Exposes the DB-API surface Django's ``CursorWrapper`` and our code use (execute, fetchone,
    fetchall, rowcount, description, ...). The statements are our named queries and the
    transaction-form helpers: a bounded set, which psycopg keeps per connection (LRU,
    ``prepared_max``) and deallocates when it evicts one.
    """

    __slots__ = ("_cur", "_sql")

    def __init__(self, cur: psycopg.Cursor) -> None:
        self._cur = cur
        self._sql = None

    def execute(self, sql, params=None):
        self._sql = sql
        try:
            self._cur.execute(sql, params, prepare=True)
        except (psycopg.errors.DuplicatePreparedStatement,
                psycopg.errors.InvalidSqlStatementName) as exc:
            # psycopg names its statements _pg3_0, _pg3_1, ... per connection. "already exists"
            # or "does not exist" for such a name means the server session is not ours: a
            # pooler in transaction mode hands our transactions to other server connections.
            if "_pg3_" not in str(exc):
                raise
            raise PoolerDropsPreparedStatements(
                "the server session does not keep this connection's prepared statements "
                f"({str(exc).strip()})") from exc
        except psycopg.errors.ProtocolViolation as exc:
            # 'bind message supplies 1 parameters, but prepared statement "_pg3_0" requires
            # 2': the name this connection prepared is another client's statement on this
            # server session. Not the connection loss its SQLSTATE class (08) suggests: the
            # same pooler fault as above (a statement of the same shape would even run).
            if 'prepared statement "_pg3_' not in str(exc):
                raise
            raise PoolerDropsPreparedStatements(
                "the server session holds another client's prepared statement under this "
                f"connection's name ({str(exc).strip()})") from exc
        return self

    @property
    def _query(self):
        """What Django's query log reads (``last_executed_query``): psycopg keeps no query
        object for a prepared execution, so the log gets the statement text (placeholders
        not interpolated)."""
        pgq = self._cur._query
        if pgq is not None and pgq.query is not None:
            return pgq
        return _LoggedQuery(None if self._sql is None else str(self._sql).encode())

    def executemany(self, sql, params_seq):
        self._cur.executemany(sql, params_seq)
        return self

    def __getattr__(self, name):
        return getattr(self._cur, name)

    def __iter__(self):
        return iter(self._cur)

    def close(self) -> None:
        self._cur.close()


class _KeptCursor(_PreparingCursor):
    """The preparing cursor of :func:`statement_cursor`, kept on its connection between calls:
    closing the Django wrapper around it leaves it open for the next statement. It is rebuilt
    when the connection is replaced or its time zone changes (the timestamptz loader).
    ``busy`` while a wrapper around it is open: a statement cursor asked for meanwhile (an
    execute wrapper or a log handler that enqueues before the outer call fetched its rows)
    gets a cursor of its own, so it cannot replace or consume the outer call's result."""

    __slots__ = ("busy",)

    def __init__(self, cur: psycopg.Cursor) -> None:
        super().__init__(cur)
        self.busy = False

    def close(self) -> None:
        self.busy = False


_KEPT = "_durable_schedule_statement_cursor"


def _hand_out(conn, held: _KeptCursor):
    """The kept cursor in a new Django wrapper, marked busy only once the wrapper exists (a
    refused wrapper, e.g. the wrong thread, leaves it free)."""
    wrapped = conn._prepare_cursor(held)
    held.busy = True
    return wrapped


def _cursor(conn, *, kept: bool = False):
    """The cursor of one transaction form: a preparing one unless PREPARE_STATEMENTS is off.
    ``kept``: the connection's kept statement cursor (:class:`_KeptCursor`), built once per
    underlying psycopg connection, wrapped in a new Django cursor wrapper each time."""
    # Per alias: a call ``using=`` an alias that declares a pooler must not prepare because the
    # store's own alias connects directly (conf.prepare_statements).
    if conn.vendor != "postgresql" or not conf.prepare_statements(conn.alias):
        return conn.cursor()
    # As Django's BaseDatabaseWrapper._cursor and the backend's create_cursor, with a plain
    # psycopg.Cursor in place of the configured cursor class.
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    if kept:
        held = getattr(conn, _KEPT, None)
        if (held is not None and held[0] is conn.connection and held[1] == conn.timezone
                and not held[2]._cur.closed):
            if not held[2].busy:
                return _hand_out(conn, held[2])
            kept = False  # in use by an enclosing call: this statement gets its own cursor
    with conn.wrap_database_errors:
        pg = conn.connection
        if pg.prepare_threshold is None:
            pg.prepare_threshold = _ONLY_WHEN_ASKED
        arrays.register(pg)  # BinaryArray parameters in the binary format (store/arrays.py)
        raw = psycopg.Cursor(pg)
        # The cursor's timestamptz loader gives what Django's loader for the project's time
        # zone gives, parsed by psycopg's C implementation when it is installed
        # (store/timestamps.py); the adapters map is otherwise the connection's own (jsonb as
        # text). Without it: Django's loader, re-registered when the connection's disagrees.
        fast = timestamps.loader_for(conn.timezone)
        tzloader = pg.adapters.get_loader(_TIMESTAMPTZ_OID, Format.TEXT)
        if fast is not None:
            raw.adapters.register_loader(_TIMESTAMPTZ_OID, fast)
        elif conn.timezone != getattr(tzloader, "timezone", conn.timezone):
            from django.db.backends.postgresql.psycopg_any import register_tzloader

            register_tzloader(conn.timezone, raw)
        if kept:
            held = _KeptCursor(raw)
            setattr(conn, _KEPT, (pg, conn.timezone, held))
            return _hand_out(conn, held)
        return conn._prepare_cursor(_PreparingCursor(raw))


def pipeline_connection(cur) -> psycopg.Connection | None:
    """The psycopg connection under a cursor of :func:`_cursor` when statements on it may run
    in a psycopg pipeline (the preparing cursor, libpq with pipeline mode), else None.
    Django's own cursor (``PREPARE_STATEMENTS = False``) may bind client-side, which pipeline
    mode refuses: the caller then runs its statements one after the other."""
    raw = getattr(cur, "cursor", None)
    if not isinstance(raw, _PreparingCursor) or not psycopg.Pipeline.is_supported():
        return None
    return raw._cur.connection


def sibling_cursor(cur):
    """A second cursor of the same form on the same connection and transaction (a pipeline
    keeps one pending result per cursor)."""
    return _cursor(cur.db)


#: in_failed_sql_transaction: "current transaction is aborted, commands ignored until end of
#: transaction block".
_ABORTED_SQLSTATE = "25P02"


def sqlstate_of(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error, looking through Django's wrapper to psycopg's."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 10:
        state = getattr(cur, "sqlstate", None)
        if state:
            return state
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def _aborted(conn, cause: str) -> TransactionAborted:
    return TransactionAborted(
        "the caller's transaction already failed: an earlier statement in the same "
        f"transaction.atomic() block raised ({cause}); nothing was written",
        using=conn.alias)


@contextmanager
def _in_usable_transaction(conn) -> Iterator[None]:
    """DS441 instead of Django's TransactionManagementError or psycopg's InFailedSqlTransaction
    (25P02) when the caller's transaction already failed (docs/work.md "Accepting Work").
    Checked before anything is sent when Django knows (the atomic block is marked for
    rollback); PostgreSQL's refusal of the first statement otherwise (a raw statement that
    failed and was caught). Nothing can have been written either way."""
    if conn.in_atomic_block and conn.needs_rollback:
        raise _aborted(conn, "Django marked the atomic block for rollback")
    try:
        yield
    except TransactionManagementError as exc:
        if conn.in_atomic_block and conn.needs_rollback:
            raise _aborted(conn, "Django marked the atomic block for rollback") from exc
        raise
    except DatabaseError as exc:
        if sqlstate_of(exc) == _ABORTED_SQLSTATE:
            raise _aborted(conn, "SQLSTATE 25P02, current transaction is aborted") from exc
        raise


def _wrong_role(exc: DatabaseError) -> WrongRole | NotStoreOwner | None:
    """DS302 for the store's own wrong-role refusal, and for the server's refusal to switch to
    a store role (SQLSTATE 42501 "permission denied to set role": the database user is not a
    member of durable_runtime / durable_dispatcher). DS308 for a member login refused the
    owner's routed entry (a runner started with a web user's credentials)."""
    text = str(exc)
    if "DS302" in text:
        return WrongRole(text.split("\n")[0])
    if "permission denied to set role" in text:
        return WrongRole("the database user may not act as the store's role: "
                         + text.split("\n")[0].strip())
    # By SQLSTATE and the function's name in the primary message (the server names it in every
    # message language; a refusal *inside* the function names it only in its CONTEXT line).
    if sqlstate_of(exc) == "42501" and "durable_schedule_enter_routed" in text.split("\n")[0]:
        return NotStoreOwner("the database user is not the store's migration owner, whose "
                             "function enters a claimed row's scope: "
                             + text.split("\n")[0].strip())
    return None


#: undefined_function, undefined_table: what PostgreSQL answers where the store's functions
#: and tables are not (``migrate`` not run yet, or an alias naming another database).
_UNDEFINED_SQLSTATES = frozenset({"42883", "42P01"})
#: The store's own objects in such an answer: ``function durable_schedule_accept_work(unknown,
#: jsonb, boolean) does not exist``, ``relation "durable_work" does not exist``.
_STORE_OBJECT = re.compile(r'^(function|relation) "?(durable_\w+|claim_(schedule|work)_dispatch)'
                           r'\b')


def store_missing(exc: BaseException, alias: str) -> SchemaMissing | None:
    """DS402 for a database error saying one of the store's own functions or tables does not
    exist, else None (a caller's SQL naming something else keeps its own error)."""
    if sqlstate_of(exc) not in _UNDEFINED_SQLSTATES:
        return None
    first = str(exc).split("\n")[0].strip()
    if not _STORE_OBJECT.match(first):
        return None
    return SchemaMissing(f"the durable_schedule store is not migrated on this database "
                         f"({first})", using=alias)


def _reraise(exc: DatabaseError, alias: str) -> NoReturn:
    """DS302 (from the database error) for a wrong role, DS402 for a store that is not there,
    else the database error itself, its cause kept: ``raise exc from exc`` would make the error
    its own cause and hide the psycopg error under it, and with it the SQLSTATE the retry and
    outage classifications read."""
    wrong = _wrong_role(exc) or store_missing(exc, alias)
    if wrong is not None:
        raise wrong from exc
    raise exc


@contextmanager
def scoped(scope_id: str, *, using: str | None = None, create: bool = True) -> Iterator[object]:
    """Run the block as ``durable_runtime`` with the local scope set; yields a raw cursor.

    ``create=True`` (writes) creates the scope row on first use: its routing id and generation
    are needed by dispatch rows and fences, and a block that raises rolls the insert back with
    its savepoint, so only a committed write creates a scope. Reads pass ``create=False``: they
    never write, and an unknown scope reads as an empty one (docs/security.md "Reads never
    create scopes"). Restores the caller's role and scope on exit; a savepoint rolled back
    inside the block that dropped the scope or role is refused with ScopeLost (DS305).
    """
    validate_scope_id(scope_id)
    conn = connection(using)
    with ExitStack() as stack:
        # DS441 for the savepoint and the scope entry only: what the block raises later is
        # its own error.
        with _in_usable_transaction(conn):
            stack.enter_context(transaction.atomic(using=conn.alias))
            cur = stack.enter_context(_cursor(conn))
            try:
                cur.execute(_ENTER_SCOPE if create else _ENTER_SCOPE_TO_READ, [scope_id])
            except DatabaseError as exc:
                _reraise(exc, conn.alias)
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
def statement_cursor(*, using: str | None = None) -> Iterator[object]:
    """A cursor for one self-contained statement that does its own role and scope entry (the
    acceptance function, docs/work.md "Accepting Work"): no savepoint and no extra round trip.

    Inside the caller's ``transaction.atomic()`` the statement joins the caller's transaction;
    a database error marks the atomic block for rollback, exactly as a failed ORM statement
    does (``atomic(savepoint=False)``). Outside any atomic block with autocommit on, the one
    statement is its own transaction (committed by PostgreSQL, no BEGIN/COMMIT round trips).
    With autocommit off, it runs in an atomic block of its own. The preparing cursor under it
    is kept on the connection between calls (its adapters and result loaders are set up once).
    """
    conn = connection(using)
    try:
        if conn.in_atomic_block:
            # DS441 when the caller's transaction already failed: refused before anything is
            # sent when Django knows, else PostgreSQL's refusal (25P02) of the one statement.
            with _in_usable_transaction(conn), \
                    transaction.atomic(using=conn.alias, savepoint=False), \
                    _cursor(conn, kept=True) as cur:
                yield cur
        elif conn.get_autocommit():
            with _cursor(conn, kept=True) as cur:
                yield cur
        else:
            with transaction.atomic(using=conn.alias), _cursor(conn, kept=True) as cur:
                yield cur
    except DatabaseError as exc:
        # DS402 where the acceptance function is not there (the store not migrated on this
        # alias's database), after the atomic block above marked the failure.
        missing = store_missing(exc, conn.alias)
        if missing is None:
            raise
        raise missing from exc


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
    with transaction.atomic(using=conn.alias, durable=True), _cursor(conn) as cur:
        nested = _previous_role_if_nested(conn, cur)
        try:
            cur.execute(_ENTER_ROUTED, [int(routing_id)])
        except DatabaseError as exc:
            _reraise(exc, conn.alias)
        scope_id = cur.fetchone()[0]
        yield cur, scope_id
        _leave_if_nested(cur, nested)


@contextmanager
def routed_pipelined(routing_id: int, statements: list[tuple[str, object]], *,
                     using: str | None = None) -> Iterator[tuple[object, str | None, list]]:
    """:func:`routed`, with the transaction's first ``statements`` (``(sql, params)`` each)
    sent with the scope entry in one psycopg pipeline: one round trip for all of them instead
    of one each. Yields ``(cursor, scope_id, rows)``: ``rows`` holds each statement's
    ``fetchall()``. The statements must read the scope from the transaction-local setting
    (``current_setting('durable_schedule.scope_id')``), not from a parameter: they are sent
    before the scope id is known. When the routing id names no visible scope they ran without
    a scope of this transaction and the caller must discard their rows (``scope_id`` None).
    Without a pipeline (Django's own cursor) they run one after the other, after the entry."""
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), _cursor(conn) as cur:
        nested = _previous_role_if_nested(conn, cur)
        pg = pipeline_connection(cur)
        cursors = [_cursor(conn) for _ in statements] if pg is not None else []
        try:
            try:
                if pg is None:
                    cur.execute(_ENTER_ROUTED, [int(routing_id)])
                else:
                    with conn.wrap_database_errors, pg.pipeline():
                        cur.execute(_ENTER_ROUTED, [int(routing_id)])
                        for statement_cursor, (sql, params) in zip(cursors, statements,
                                                                   strict=True):
                            statement_cursor.execute(sql, params)
            except DatabaseError as exc:
                _reraise(exc, conn.alias)
            scope_id = cur.fetchone()[0]
            if pg is None:
                rows = []
                for sql, params in statements:
                    cur.execute(sql, params)
                    rows.append(cur.fetchall())
            else:
                rows = [statement_cursor.fetchall() for statement_cursor in cursors]
        finally:
            for statement_cursor in cursors:
                statement_cursor.close()
        yield cur, scope_id, rows
        _leave_if_nested(cur, nested)


_CURRENT_ROLE = "select current_user"
# As _set_role's statement, which relies on the same left-to-right evaluation: the first
# current_user is the connection's own role, the last proves the switch took.
_OWN_ROLE_THEN_RUNTIME = "select current_user, set_config('role', %s, true), current_user"
_BACK_TO_ROLE = "select set_config('role', %s, true), set_config(%s, '', true)"
# Left to right as well: current_user is read before the function switches to the runtime role
# (the function is executable by the connection's own role only, which is the role then).
_OWN_ROLE_THEN_ROUTED = "select current_user, durable_schedule_enter_routed(%s)"


@contextmanager
def routed_batch(*, using: str | None = None,
                 claiming: bool = True) -> Iterator[tuple[object, object]]:
    """One outermost transaction as ``durable_runtime`` that visits several scopes in turn (the
    Work pipeline's batched claim, admission and group commit, docs/work.md "Batched Work").

    Yields ``(cursor, enter)``; ``enter(routing_id)`` returns to the connection's own role with
    no scope (``durable_schedule_enter_routed`` is executable by that role only), then enters
    the scope the routing id names through it, and returns the scope id (None, with no scope
    set, when the routing id names no scope the runtime may see). Row-level security therefore
    admits exactly one scope at a time, as in :func:`routed`; the transaction commits once.
    ``claiming=True`` starts as ``durable_runtime`` with no scope (for the cross-scope claim);
    ``claiming=False`` starts as the connection's own role, so the first ``enter`` needs no
    switch back and reads the own role in the same statement (the group commit: two statements
    fewer). ``enter.own_role`` is the connection's own role (claiming); a statement that itself
    returns to it (``set_config('role', own_role, true)`` as its last effect, no scope set)
    calls ``enter.returned()``, and the next ``enter`` skips the switch back.
    """
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), _cursor(conn) as cur:
        # The connection's own role: read with the switch to the runtime role (claiming), or
        # with the first scope entry (not claiming: one round trip fewer).
        own_role: list[str | None] = [None]
        if claiming:
            try:
                cur.execute(_OWN_ROLE_THEN_RUNTIME, [RUNTIME_ROLE])
            except DatabaseError as exc:
                _reraise(exc, conn.alias)
            own_role[0], _, user = cur.fetchone()
            if user != RUNTIME_ROLE:
                raise WrongRole(f"expected to run as {RUNTIME_ROLE}, current_user is {user}")
        at_own_role = [not claiming]

        def enter(routing_id: int) -> str | None:
            first = own_role[0] is None
            if not at_own_role[0]:
                cur.execute(_BACK_TO_ROLE, [own_role[0], SCOPE_SETTING])
            at_own_role[0] = False
            try:
                cur.execute(_OWN_ROLE_THEN_ROUTED if first else _ENTER_ROUTED,
                            [int(routing_id)])
            except DatabaseError as exc:
                _reraise(exc, conn.alias)
            row = cur.fetchone()
            if first:
                own_role[0] = row[0]
            return row[-1]

        def returned() -> None:
            # The caller's last statement ended with set_config('role', enter.own_role, true)
            # and set no scope (the batched claim does, after its claim): the next enter needs
            # no switch back.
            at_own_role[0] = True

        enter.own_role = own_role[0]
        enter.returned = returned
        yield cur, enter
        if conn.savepoint_ids:
            if own_role[0] is None:  # never switched: the current role is the own one
                cur.execute(_CURRENT_ROLE)
                own_role[0] = cur.fetchone()[0]
            _leave_if_nested(cur, own_role[0])


@contextmanager
def runtime_transaction(*, using: str | None = None) -> Iterator[object]:
    """An outermost transaction as ``durable_runtime`` with no scope (e.g. Work claims)."""
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), _cursor(conn) as cur:
        nested = _previous_role_if_nested(conn, cur)
        _set_role(cur, RUNTIME_ROLE)
        yield cur
        _leave_if_nested(cur, nested)


@contextmanager
def dispatcher_transaction(*, using: str | None = None,
                           first: tuple[str, object] | None = None) -> Iterator[object]:
    """The claim transaction: its own outermost transaction as ``durable_dispatcher``.

    ``durable=True`` makes Django refuse to run it inside a caller's atomic block, so the claim
    always commits before scoped data is read (docs/protocol/schedules.md, transaction form 1).

    ``first``: ``(sql, params)`` of the transaction's first statement after the role switch
    (the claim). It is sent with the switch in one psycopg pipeline, one round trip instead of
    two, and the yielded cursor holds its result. The switch's proof is checked once both
    results are back; a failed proof raises before anything commits (the transaction rolls
    back with whatever the statement did).
    """
    conn = connection(using)
    with transaction.atomic(using=conn.alias, durable=True), _cursor(conn) as cur:
        nested = _previous_role_if_nested(conn, cur)
        pg = None if first is None else pipeline_connection(cur)
        if pg is None:
            _set_role(cur, DISPATCHER_ROLE)
            if first is not None:
                cur.execute(*first)
        else:
            with _cursor(conn) as role_cur:
                try:
                    with conn.wrap_database_errors, pg.pipeline():
                        role_cur.execute(_ENTER_DISPATCHER + ", current_user",
                                         [DISPATCHER_ROLE])
                        cur.execute(*first)
                except DatabaseError as exc:
                    _reraise(exc, conn.alias)
                _, user = role_cur.fetchone()
            if user != DISPATCHER_ROLE:
                raise WrongRole(f"expected to run as {DISPATCHER_ROLE}, current_user is {user}")
        yield cur
        _leave_if_nested(cur, nested)


def _set_role(cur, role: str) -> None:
    """SET LOCAL ROLE, then prove it took (one statement: set_config returns the new role only
    when the switch succeeded; a failure raises)."""
    try:
        cur.execute(_ENTER_DISPATCHER + ", current_user", [role])
    except DatabaseError as exc:
        _reraise(exc, cur.db.alias)
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
