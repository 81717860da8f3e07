"""The widening half of the drift check (store/inspection.py ``grant_problems``): privileges the
contract never grants, row-level security switched off or unforced, and policies that differ
from the migrations' (docs/security.md).

A missing grant breaks the runtime loudly; a widened one breaks tenant isolation silently, so
it is the one a check must find: TRUNCATE (which ignores row-level security), a column grant on
an identity or scope column, an extra permissive policy, a policy rewritten to ``true``, FORCE
lifted. Attached history partitions are checked like their parent: PostgreSQL applies a
partition's own grants and policies when it is queried directly. Detached (archived) months
are the owner's alone (operations/archive.py) and are not checked.

Pinned search paths: every function a migration pins (``ALTER FUNCTION ... SET search_path =
<app schema>, pg_temp``) must still carry exactly that setting. ``CREATE OR REPLACE FUNCTION``
without its own ``SET`` clause drops it (schema 17 repaired two such functions), so the set of
pinned functions is read from the migration SQL files themselves (:func:`pinned_functions`),
never from a list kept by hand; SECURITY DEFINER functions are checked by their own query
(store/inspection.py), this one covers the others.
"""

from __future__ import annotations

import logging
import re
from functools import cache

from durable_schedule.store import sqlfiles
from durable_schedule.store.sqlfiles import query

log = logging.getLogger(__name__)

#: Privileges the contract never grants on a table, to any role.
NEVER_GRANTED = ("TRUNCATE", "REFERENCES", "TRIGGER")
TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE") + NEVER_GRANTED
COLUMN_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "REFERENCES")
HISTORY = "durable_schedule_history"
#: Tables without row-level security by design (no scope id, or owner-only registries).
UNSCOPED = frozenset({"durable_schedule_store", "durable_runner_heartbeat",
                      "durable_schedule_routing"})

_ISOLATION = "scope_id = NULLIF(current_setting('durable_schedule.scope_id', true), '')"
_DISPATCH_RUNTIME = ("scope_routing_id = (SELECT s.routing_id FROM durable_schedule_scope s "
                     f"WHERE s.{_ISOLATION})")
#: policy -> (command, roles, USING, WITH CHECK); "{owner}" is the table's owner, "{runtime}"
#: and "{dispatcher}" the roles. Every scoped table has the isolation policy.
_ISOLATION_POLICY = {"durable_scope_isolation": ("ALL", ("public",), _ISOLATION, _ISOLATION)}
_DISPATCH_POLICIES = {
    "durable_dispatch_runtime": ("ALL", ("{runtime}",), _DISPATCH_RUNTIME, _DISPATCH_RUNTIME),
    "durable_dispatch_dispatcher": ("SELECT", ("{dispatcher}",), "true", None),
    "durable_dispatch_owner": ("ALL", ("{owner}",), "true", "true"),
}
EXTRA_POLICIES = {
    "durable_schedule_scope": {"durable_scope_routing_lookup": (
        "SELECT", ("{runtime}",),
        "routing_id = NULLIF(current_setting('durable_schedule.routing_id', true), '')::bigint",
        None)},
}
DISPATCH_TABLES = frozenset({"durable_schedule_dispatch", "durable_work_dispatch"})


def _q(name: str) -> str:
    return query("inspection_queries.sql", name)


def _normal(expr: str | None) -> str | None:
    """An expression as PostgreSQL deparses it, without what deparsing adds or drops
    (whitespace, parentheses, ``::text`` casts, the ``pg_catalog.`` the migrations write),
    lower case. Any other qualifier stays: a function of another schema is another function."""
    if expr is None:
        return None
    text = expr.replace("::text", "").replace("pg_catalog.", "")
    return re.sub(r"[\s()]", "", text).lower()


def history_partitions(cur) -> list[str]:
    """The attached partitions of the schedule history (the default one included)."""
    cur.execute(_q("history_partitions"))
    return [r[0] for r in cur.fetchall()]


# ---------------------------------------------------------------- set-based reads
# One catalog query per kind of fact, for every table (and role) at once: the check runs at
# every ``durable_status`` and every metrics scrape (``durable_schedule_store_up``), and a
# statement per table, column and function made it about 160 round trips.


def table_privileges_of(cur, roles: list[str], tables: list[str]) -> dict[tuple[str, str],
                                                                         set[str]]:
    """``{(role, table): privileges held}`` of TABLE_PRIVILEGES (PUBLIC's included), every
    pair present (an empty set when none is held)."""
    cur.execute(_q("table_privileges_of"), {"roles": roles, "tables": tables,
                                             "privs": list(TABLE_PRIVILEGES)})
    out: dict[tuple[str, str], set[str]] = {(r, t): set() for r in roles for t in tables}
    for role, table, priv in cur.fetchall():
        out[(role, table)].add(priv)
    return out


def column_privileges_of(cur, role: str, tables: list[str]) -> dict[str, list[tuple[str, str]]]:
    """``{table: [(column, privilege), ...]}`` of COLUMN_PRIVILEGES ``role`` holds on each
    table's live columns, ordered by column then privilege."""
    cur.execute(_q("column_privileges_of"), {"role": role, "tables": tables,
                                              "privs": list(COLUMN_PRIVILEGES)})
    out: dict[str, list[tuple[str, str]]] = {t: [] for t in tables}
    for table, column, priv in cur.fetchall():
        out[table].append((column, priv))
    return out


def lacking_column_privileges(cur, wanted: list[tuple[str, str, str, str]]
                              ) -> set[tuple[str, str, str, str]]:
    """Of the ``(role, table, column, privilege)`` given, those the role does not hold."""
    if not wanted:
        return set()
    cur.execute(_q("lacking_column_privileges"), {
        "roles": [w[0] for w in wanted], "tables": [w[1] for w in wanted],
        "columns": [w[2] for w in wanted], "privs": [w[3] for w in wanted]})
    return {tuple(r) for r in cur.fetchall()}


def function_access(cur, wanted: list[tuple[str, str]]
                    ) -> dict[tuple[str, str], tuple[bool, bool, bool]]:
    """``{(role, signature): (exists, role may EXECUTE, PUBLIC may EXECUTE)}``."""
    if not wanted:
        return {}
    cur.execute(_q("function_access"), {"roles": [w[0] for w in wanted],
                                         "signatures": [w[1] for w in wanted]})
    return {(role, fn): (exists, bool(mine), bool(public))
            for role, fn, exists, mine, public in cur.fetchall()}


#: What the contract grants on an identity sequence of a store table: the runtime's USAGE
#: (nextval, for its inserts); nothing else to anyone. SELECT reads last_value (how many rows
#: every scope together wrote), UPDATE allows setval (every later insert into the table, in
#: every scope, then fails on its primary key).
SEQUENCE_PRIVILEGES = ("USAGE", "SELECT", "UPDATE")


def sequence_problems(cur, *, runtime: str, dispatcher: str, exact: bool = True) -> list[str]:
    """Drift of the identity sequences' privileges, both ways: the runtime's USAGE missing
    (every insert into the table fails), any other privilege of the runtime, the dispatcher
    or PUBLIC (a role's held only through PUBLIC is PUBLIC's finding, once). Not ``exact`` (a
    store at a newer schema than this code): a sequence of a table this code does not know
    may be the owner's alone, so only the widened privileges are reported."""
    cur.execute(_q("sequence_privileges"), {"privs": list(SEQUENCE_PRIVILEGES),
                                             "runtime": runtime, "dispatcher": dispatcher})
    problems: list[str] = []
    for seq, public, runtime_held, dispatcher_held in cur.fetchall():
        if exact and "USAGE" not in runtime_held:
            problems.append(f"{runtime} lacks USAGE on sequence {seq}: every insert into its "
                            f"table fails (GRANT USAGE ON SEQUENCE {seq} TO {runtime})")
        extras = [("PUBLIC", priv) for priv in public]
        extras += [(runtime, priv) for priv in runtime_held
                   if priv != "USAGE" and priv not in public]
        extras += [(dispatcher, priv) for priv in dispatcher_held if priv not in public]
        problems.extend(f"{who} has unexpected {priv} on sequence {seq} (REVOKE {priv} ON "
                        f"SEQUENCE {seq} FROM {who})" for who, priv in extras)
    return problems


def column_extras_of(role: str, table: str, held_columns: list[tuple[str, str]],
                     by_column: dict[str, tuple[str, ...]], held: set[str]) -> list[str]:
    """Column privileges beyond the contract's (from :func:`column_privileges_of`), for
    privileges not ``held`` table-wide (a table-wide one, expected or not, is the caller's
    finding, once, not per column)."""
    return [f"{role} has unexpected {priv} ({column}) on {table}"
            for column, priv in held_columns
            if priv not in held and column not in by_column.get(priv, ())]


def rls_problems(cur, tables: list[str], *, runtime: str, dispatcher: str,
                 policies: bool = True) -> list[str]:
    """Row-level security enabled and forced, and (with ``policies``) exactly the contract's
    policies, on every scoped table and attached history partition."""
    scoped = [t for t in tables if t not in UNSCOPED]
    cur.execute(_q("rls_flags"), {"tables": scoped})
    flags = {name: (enabled, forced, owner) for name, enabled, forced, owner in cur.fetchall()}
    problems = []
    for table in scoped:
        if table not in flags:
            continue  # a missing table is another check's finding (the migration state)
        enabled, forced, _owner = flags[table]
        if not (enabled and forced):
            problems.append(f"row-level security is not enabled and forced on {table}")
    if not policies:
        return problems
    # A table another session holds exclusively (a migration running, a LOCK TABLE) is left out
    # of the policy comparison: reading its policies' text would wait for that lock, and a check
    # run at a runner's start-up would then hang before the runner can even handle SIGTERM. Its
    # RLS switches above were still read (pg_class needs no table lock).
    cur.execute(_q("locked_out_tables"), {"tables": scoped})
    locked = {name for (name,) in cur.fetchall()}
    if locked:
        log.warning("policies of %s not compared: the table is locked by another session",
                    ", ".join(sorted(locked)))
        scoped = [t for t in scoped if t not in locked]
    cur.execute(_q("policies"), {"tables": scoped})
    live: dict[str, dict[str, tuple]] = {}
    for table, name, permissive, cmd, roles, qual, check in cur.fetchall():
        live.setdefault(table, {})[name] = (permissive, cmd, tuple(sorted(roles)), qual, check)
    names = {"runtime": runtime, "dispatcher": dispatcher}
    for table in scoped:
        if table not in flags:
            continue
        expected = dict(_DISPATCH_POLICIES if table in DISPATCH_TABLES else _ISOLATION_POLICY)
        expected.update(EXTRA_POLICIES.get(table, {}))
        found = live.get(table, {})
        for name in sorted(set(found) - set(expected)):
            problems.append(f"unexpected policy {name} on {table}")
        for name, (cmd, roles, qual, check) in expected.items():
            if name not in found:
                problems.append(f"policy {name} on {table} is missing")
                continue
            permissive, live_cmd, live_roles, live_qual, live_check = found[name]
            want_roles = tuple(sorted(r.format(owner=flags[table][2], **names) for r in roles))
            if (permissive != "PERMISSIVE" or live_cmd != cmd or live_roles != want_roles
                    or _normal(live_qual) != _normal(qual)
                    or _normal(live_check) != _normal(check)):
                problems.append(f"policy {name} on {table} is not the contract's")
    return problems


# ---------------------------------------------------------------- pinned search paths
_MIGRATION_FILE = re.compile(r"^\d{4}_.*\.sql$")
#: One ``EXECUTE format('...' '...', ...)`` call: its adjacent string literals (SQL joins
#: literals separated by a newline) hold the statement text.
_EXECUTE = re.compile(r"EXECUTE\s+(?:pg_catalog\.)?format\(\s*((?:'(?:[^']|'')*'\s*)+)",
                      re.IGNORECASE)
_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_PIN = re.compile(r"ALTER\s+FUNCTION\s+(.+?)\s+SET\s+search_path\s*=\s*%I\s*,\s*pg_temp",
                  re.IGNORECASE | re.DOTALL)
_ARRAY = re.compile(r"FOREACH\s+\w+\s+IN\s+ARRAY\s+ARRAY\[(.*?)\]", re.IGNORECASE | re.DOTALL)
_DO_BLOCK = re.compile(r"DO\s+(\$\w*\$)(.*?)\1", re.DOTALL)


_CREATE = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(",
                     re.IGNORECASE)


def _name(signature: str) -> str:
    return signature.split("(", 1)[0].strip().lower()


def pin_events(text: str) -> list[tuple[int, str, str]]:
    """What one SQL text does to pinned search paths, in text order: ``(position, "pin",
    signature)`` for an ``ALTER FUNCTION <signature> SET search_path = %I, pg_temp`` run through
    ``EXECUTE format(...)``, directly or for each element of the ``FOREACH ... IN ARRAY
    ARRAY[...]`` of its ``DO`` block (``ALTER FUNCTION %s``); ``(position, "create", name)``
    for a ``CREATE [OR REPLACE] FUNCTION``, which drops an earlier SET clause of every function
    of that name (no migration writes a SET clause inside CREATE FUNCTION). Comment lines are
    left out."""
    text = "\n".join("" if line.lstrip().startswith("--") else line
                      for line in text.splitlines())
    events: list[tuple[int, str, str]] = [(m.start(), "create", m.group(1).lower())
                                          for m in _CREATE.finditer(text)]
    for block in _DO_BLOCK.finditer(text):
        body, offset = block.group(2), block.start(2)
        for call in _EXECUTE.finditer(body):
            statement = "".join(m.replace("''", "'") for m in _LITERAL.findall(call.group(1)))
            pin = _PIN.search(statement)
            if pin is None:
                continue
            target = pin.group(1).strip()
            if target == "%s":
                targets = [m.replace("''", "'") for array in _ARRAY.finditer(body[:call.start()])
                           for m in _LITERAL.findall(array.group(1))]
            else:
                targets = [target]
            events.extend((offset + call.start(), "pin", " ".join(t.split())) for t in targets)
    return sorted(events)


@cache
def pinned_functions() -> tuple[str, ...]:
    """Every function signature the store's migrations leave pinned, sorted: the migration SQL
    files replayed in order, a pin adding its signature, a later ``CREATE OR REPLACE`` of that
    name removing it again (schema 15 unpinned the dispatch routing trigger's function that way,
    on purpose) until a later pin. A function a later migration dropped is looked up and
    skipped by :func:`unpinned_functions`."""
    pinned: set[str] = set()
    for filename in sqlfiles.available():
        if not _MIGRATION_FILE.match(filename):
            continue
        for _position, kind, value in pin_events(sqlfiles.read(filename)):
            if kind == "pin":
                pinned.add(value)
            else:
                pinned = {sig for sig in pinned if _name(sig) != value}
    return tuple(sorted(pinned))


def unpinned_functions(cur) -> list[str]:
    """The pinned functions that exist and are not SECURITY DEFINER but no longer carry
    exactly ``search_path=<app schema>, pg_temp`` (one catalog query)."""
    cur.execute(_q("unpinned_functions"), {"signatures": list(pinned_functions())})
    return [r[0] for r in cur.fetchall()]
