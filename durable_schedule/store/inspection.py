"""Reads the store's own health: schema version against the floor, roles, exact grants.

Used by the system checks, by the runtime's start-up guard and by ``durable_status``. The
expected grants below are the contract of migration 0002 (docs/protocol/storage.md) written as data,
so a drifted database (a grant revoked or added by hand) is reported, not trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from durable_schedule.store import drift
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION

RUNTIME_ROLE = "durable_runtime"
DISPATCHER_ROLE = "durable_dispatcher"

#: table -> (table-wide privileges, {privilege: columns}) for the runtime role.
RUNTIME_GRANTS: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    "durable_schedule_store": (("SELECT",), {"UPDATE": ("updated_at",)}),
    "durable_schedule_scope": (("SELECT",), {"INSERT": ("scope_id",), "UPDATE": ("updated_at",)}),
    "durable_schedule_definition": (("SELECT", "INSERT"), {"UPDATE": (
        "state", "revision", "active_generation", "runtime_epoch", "scope_generation",
        "cursor_utc", "suspension_reason", "suspension_evidence", "suspended_at", "updated_at",
        # pause / resume and the missed-instant counters (0011_lifecycle.sql)
        "paused_at", "paused_by", "pause_note", "resumed_at", "missed")}),
    "durable_schedule_generation": (("SELECT", "INSERT"), {}),
    "durable_schedule_occurrence": (("SELECT", "INSERT"), {"UPDATE": (
        "state", "last_nominal_utc", "work_id", "work_command", "work_idempotency_key",
        "updated_at")}),
    "durable_schedule_dispatch": (("SELECT",), {
        "INSERT": ("scope_routing_id", "schedule_id", "due_at"),
        "UPDATE": ("due_at", "lease_owner", "lease_expires_at", "dispatch_revision")}),
    "durable_schedule_history": (("SELECT", "INSERT"), {}),
    "durable_work": (("SELECT", "INSERT"), {"UPDATE": (
        "due_at", "state", "attempt", "lease_owner", "lease_expires_at", "lease_generation",
        "attempt_started_at", "result", "last_error", "suspension_reason",
        "execution_admission_closed_at", "execution_admission_closed_reason",
        "execution_deadline_reached_at", "finished_at", "updated_at")}),
    "durable_work_dispatch": (("SELECT", "DELETE"), {
        "INSERT": ("scope_routing_id", "work_ref", "due_at"),
        "UPDATE": ("due_at", "lease_owner", "lease_expires_at", "dispatch_revision")}),
    "durable_work_permit": (("SELECT", "INSERT"), {"UPDATE": (
        "outcome", "resolved_at", "resolved_by", "resolution_source")}),
    "durable_work_quarantine": (("SELECT", "INSERT"), {}),
    "durable_work_history": (("SELECT", "INSERT"), {}),
    # Runner heartbeats: no table privilege at all, writes go through durable_runner_beat().
    "durable_runner_heartbeat": ((), {}),
    # The retention mark and the routing registry are the owner's operations' alone.
    "durable_work_retention_mark": ((), {}),
    "durable_schedule_routing": ((), {}),
}

#: Columns of the schedule dispatch table the dispatcher may read; nothing else anywhere.
DISPATCHER_COLUMNS = ("dispatch_id", "scope_routing_id", "schedule_id", "lease_owner",
                      "lease_expires_at", "lease_generation", "dispatch_revision")
DISPATCHER_FUNCTIONS = ("claim_schedule_dispatch(text, interval, integer)",)
RUNTIME_FUNCTIONS = ("claim_work_dispatch(text, interval, integer, text[])",
                     "durable_schedule_clock(text)",
                     "durable_schedule_enter_scope(text)",
                     "durable_schedule_enter_scope_to_read(text)",
                     "durable_schedule_is_identifier(text)",
                     "durable_schedule_leave_scope(text, text, text)",
                     # Acceptance: the application role calls the first (it enters the
                     # runtime role inside), which calls the second as the runtime; the Work
                     # table's insert trigger calls the third as the runtime.
                     "durable_schedule_accept_work(text, jsonb, boolean)",
                     "durable_schedule_accept_rows(text, jsonb)",
                     "durable_work_identifiers_ok(text, text, text, text)",
                     "durable_runner_beat(uuid, text, text, text, integer, text, double precision,"
                     " bigint, jsonb, boolean)")


def _q(name: str) -> str:
    return query("inspection_queries.sql", name)


@dataclass
class SchemaReport:
    migrated: bool
    schema_version: int | None = None
    compatibility_floor: int | None = None
    runtime_epoch: int | None = None
    required: int = REQUIRED_SCHEMA
    role_problems: list[str] = field(default_factory=list)

    @property
    def below_floor(self) -> bool:
        """The database is older than this code needs, or this code is older than the floor the
        database demands of its readers and writers (docs/protocol/work.md "Schema and release
        migration")."""
        return self.migrated and (
            (self.schema_version or 0) < self.required
            or (self.compatibility_floor or 0) > SCHEMA_VERSION
        )

    @property
    def healthy(self) -> bool:
        return self.migrated and not self.below_floor and not self.role_problems


def schema_report(cur) -> SchemaReport:
    """Inspect the store through a cursor of the owner's connection (no scope needed)."""
    cur.execute(_q("store_exists"))
    if not cur.fetchone()[0]:
        return SchemaReport(migrated=False)
    cur.execute(_q("store_row"))
    row = cur.fetchone()
    if row is None:
        return SchemaReport(migrated=False)
    report = SchemaReport(True, row[0], row[1], row[2])
    if (row[0] or 0) >= REQUIRED_SCHEMA:
        # Below it the store lacks tables and columns the contract names: reading them would
        # fail (a mere "cannot read" warning instead of DS401); migrate first, then compare.
        report.role_problems = grant_problems(cur, schema_version=row[0])
    return report


def _migrate_command_of(cur) -> str:
    """The ``migrate`` that fixes the database ``cur`` reads: ``--database <alias>`` for a
    Django cursor on another alias than "default" (a plain ``migrate`` leaves that database as
    it is); a bare psycopg cursor has no alias to name."""
    from durable_schedule.checks import migrate_command

    alias = getattr(getattr(cur, "db", None), "alias", None)
    return migrate_command(alias) if isinstance(alias, str) else "manage.py migrate"


def grant_problems(cur, *, schema_version: int | None = None) -> list[str]:
    """Every difference between the live roles/grants and the contract, as sentences.

    A store at a newer schema than this code (``schema_version`` above SCHEMA_VERSION, still
    admitted by its floor) may grant more columns and carry more or changed policies than this
    code's contract knows: those are left to the newer code's check. What no migration ever
    does (TRUNCATE and the other never-granted privileges, row-level security off or
    unforced) is reported whatever the schema."""
    exact = schema_version is None or schema_version <= SCHEMA_VERSION
    problems: list[str] = []
    memberships: list[str] = []
    cur.execute(_q("role_flags"), ([RUNTIME_ROLE, DISPATCHER_ROLE],))
    flags = {found[0]: found[1:] for found in cur.fetchall()}
    for role in (RUNTIME_ROLE, DISPATCHER_ROLE):
        row = flags.get(role)
        if row is None:
            problems.append(f"role {role} is missing")
        elif row[0] or row[1]:
            problems.append(f"role {role} is superuser or bypasses row-level security")
        else:
            # No migration makes either role a member of another (the owner is a member *of*
            # them). A membership brings the other role's privileges and its row-level
            # security policies: the runtime as a member of the dispatcher reads every
            # scope's dispatch rows through the dispatcher's policy, which no grant shows.
            memberships.extend(f"role {role} is a member of role {granted}: it takes on "
                               "that role's privileges and row-level security policies "
                               f"(REVOKE {granted} FROM {role})" for granted in row[2])
            # NOLOGIN: whoever logs in as the runtime sets any scope (any role may) and reads
            # it; CREATEROLE grants it any non-superuser role, the owner's included;
            # REPLICATION streams every row past row-level security.
            memberships.extend(
                f"role {role} has {flag}: the contract's role has none of LOGIN, CREATEROLE "
                f"and REPLICATION (ALTER ROLE {role} NO{flag})"
                for flag, held in (("LOGIN", row[3]), ("CREATEROLE", row[4]),
                                   ("REPLICATION", row[5])) if held)
    if problems:
        return problems
    problems.extend(memberships)
    # The connection enters both roles with SET LOCAL ROLE: without the membership every scoped
    # call and every claim fails (DS302), which the check says before the first one does.
    cur.execute(_q("roles_session_may_not_set"), ([RUNTIME_ROLE, DISPATCHER_ROLE],))
    unset = [role for (role,) in cur.fetchall()]
    if unset:
        cur.execute("select session_user")
        user = cur.fetchone()[0]
        # A user holding ADMIN OPTION only (a PostgreSQL 16+ CREATEROLE creator) is completed
        # by migrate itself (apps.py); anyone else needs the DBA's GRANT, named exactly.
        migrate = _migrate_command_of(cur)
        problems.extend(f"the database user may not SET ROLE {role}: every transaction that "
                        f"enters it fails (DS302) (run {migrate}; else a DBA runs GRANT "
                        f"{role} TO {_quoted(user)};)" for role in unset)
    # The pinned search path names the app schema: whoever may create objects in it plants a
    # function or table the store's functions and the owner's own statements resolve (an
    # overload PostgreSQL prefers for an argument type runs with the caller's rights).
    cur.execute(_q("schema_creators"), ([RUNTIME_ROLE, DISPATCHER_ROLE],))
    problems.extend(
        f"{who} may CREATE in schema {schema}: a function or table it plants there is "
        f"resolved by the store's functions and the owner's statements (REVOKE CREATE ON "
        f"SCHEMA {quoted} FROM {who})" if is_app else
        f"{who} may CREATE in schema {schema} of the search path: an overload it plants there "
        f"is resolved by the owner's statements (REVOKE CREATE ON SCHEMA {quoted} FROM {who}, "
        "or take the schema off the search path)"
        for who, schema, quoted, is_app in cur.fetchall())
    # Attached history partitions carry their own grants: the parent's contract applies.
    partitions = drift.history_partitions(cur)
    contract = dict(RUNTIME_GRANTS)
    contract.update((p, RUNTIME_GRANTS[drift.HISTORY]) for p in partitions)
    tables = list(contract)
    # Every fact read set-based, once (store/drift.py), then compared table by table.
    privileges = drift.table_privileges_of(cur, [RUNTIME_ROLE, DISPATCHER_ROLE], tables)
    columns_held = drift.column_privileges_of(cur, RUNTIME_ROLE, tables) if exact else {}
    # Every column privilege of the dispatcher (its own or PUBLIC's), on every table: a column
    # grant gives no table privilege, so the table-wide read above does not see one, and with
    # it the dispatcher sets a scope (any role may) and reads that scope's column.
    dispatcher_columns = drift.column_privileges_of(cur, DISPATCHER_ROLE, tables)
    wanted = [(RUNTIME_ROLE, table, column, priv) for table, (_whole, by_column)
              in contract.items() for priv, columns in by_column.items() for column in columns]
    wanted += [(DISPATCHER_ROLE, "durable_schedule_dispatch", column, "SELECT")
               for column in DISPATCHER_COLUMNS]
    lacking = drift.lacking_column_privileges(cur, wanted)
    for table, (whole, by_column) in contract.items():
        held = privileges[(RUNTIME_ROLE, table)]
        for priv in drift.TABLE_PRIVILEGES:
            if (priv in whole) != (priv in held):
                state = "lacks" if priv in whole else "has unexpected"
                problems.append(f"{RUNTIME_ROLE} {state} {priv} on {table}")
        for priv, columns in by_column.items():
            for column in columns:
                if (RUNTIME_ROLE, table, column, priv) in lacking:
                    problems.append(f"{RUNTIME_ROLE} lacks {priv} ({column}) on {table}")
        if exact:
            problems.extend(drift.column_extras_of(RUNTIME_ROLE, table, columns_held[table],
                                                   by_column, held))
        if privileges[(DISPATCHER_ROLE, table)]:
            problems.append(f"{DISPATCHER_ROLE} has table privileges on {table}")
        else:
            allowed = ({"SELECT": DISPATCHER_COLUMNS} if table == "durable_schedule_dispatch"
                       else {})
            problems.extend(drift.column_extras_of(DISPATCHER_ROLE, table,
                                                   dispatcher_columns[table], allowed, set()))
    problems.extend(drift.sequence_problems(cur, runtime=RUNTIME_ROLE,
                                            dispatcher=DISPATCHER_ROLE, exact=exact))
    problems.extend(drift.rls_problems(cur, tables, runtime=RUNTIME_ROLE,
                                       dispatcher=DISPATCHER_ROLE, policies=exact))
    for column in DISPATCHER_COLUMNS:
        if (DISPATCHER_ROLE, "durable_schedule_dispatch", column, "SELECT") in lacking:
            problems.append(
                f"{DISPATCHER_ROLE} lacks SELECT ({column}) on durable_schedule_dispatch"
            )
    functions = [(role, fn) for role, funcs in ((DISPATCHER_ROLE, DISPATCHER_FUNCTIONS),
                                                (RUNTIME_ROLE, RUNTIME_FUNCTIONS))
                 for fn in funcs]
    access = drift.function_access(cur, functions)
    for role, fn in functions:
        exists, mine, public = access[(role, fn)]
        if not exists:
            problems.append(f"function {fn} is missing")
            continue
        if not mine:
            problems.append(f"{role} lacks EXECUTE on {fn}")
        if public:
            problems.append(f"PUBLIC may EXECUTE {fn}")
    cur.execute(_q("has_store_functions"))
    if cur.fetchone()[0]:
        cur.execute(_q("public_functions"))
        problems.extend(f"PUBLIC may EXECUTE {fn}" for (fn,) in cur.fetchall())
        cur.execute(_q("unpinned_definer_functions"))
        problems.extend(f"SECURITY DEFINER function {fn} lacks its pinned search_path "
                        "(<app schema>, pg_temp)" for (fn,) in cur.fetchall())
        problems.extend(f"function {fn} lacks its pinned search_path (<app schema>, pg_temp)"
                        for fn in drift.unpinned_functions(cur))
        # The migration owner owns every store object: a role that owns one may drop it (the
        # clock seam, a claim function), alter its settings and grant it to anyone.
        cur.execute(_q("owned_by_roles"), {"roles": [RUNTIME_ROLE, DISPATCHER_ROLE]})
        problems.extend(f"{what} is owned by {role}: the migration owner owns every store "
                        f"object (ALTER {what.split(' ', 1)[0].upper()} "
                        f"{what.split(' ', 1)[1]} OWNER TO <migration owner>)"
                        for what, role in cur.fetchall())
    cur.execute(_q("executable_functions"), (DISPATCHER_ROLE,))
    for (fn,) in cur.fetchall():
        if fn.replace(" ", "") not in {f.replace(" ", "") for f in DISPATCHER_FUNCTIONS}:
            problems.append(f"{DISPATCHER_ROLE} may EXECUTE {fn}")
    if exact:
        # The runtime's SECURITY DEFINER functions are exactly its contract's: any other runs
        # as the owner on the runtime's behalf (claim_schedule_dispatch would hand it the
        # dispatcher's cross-scope claim). A newer schema may add some: its check says.
        cur.execute(_q("definer_functions_executable"), (RUNTIME_ROLE,))
        allowed = {f.replace(" ", "") for f in RUNTIME_FUNCTIONS}
        problems.extend(f"{RUNTIME_ROLE} may EXECUTE the SECURITY DEFINER function {fn}"
                        for (fn,) in cur.fetchall() if fn.replace(" ", "") not in allowed)
    return problems


def revoke_public_execute(cur) -> list[str]:
    """Revoke PUBLIC's EXECUTE from every store function that has it (as the owner); returns
    what was revoked. Run after every ``migrate`` (apps.py): django-pgtrigger creates the
    function of a newly installed trigger with PostgreSQL's default PUBLIC EXECUTE."""
    cur.execute(_q("has_store_functions"))
    if not cur.fetchone()[0]:
        return []
    cur.execute(_q("revoke_public_execute"))
    return [r[0] for r in cur.fetchall()]


def _quoted(name: str) -> str:
    """A role name as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def grant_recipe(owner: str | None = None) -> str:
    """The SQL a DBA runs to create the roles and grants by hand (docs/protocol/storage.md).

    ``owner`` is the database user that runs ``migrate`` (the ``USER`` of ``DATABASES``): the
    membership line names it, quoted, so the DBA runs the lines as printed. Without one (a
    ``USER`` left to libpq's default) the line keeps the placeholder and says what to put in."""
    member = _quoted(owner) if owner else "<migration owner>"
    lines = [
        f"CREATE ROLE {RUNTIME_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;",
        f"CREATE ROLE {DISPATCHER_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;",
        f"GRANT {RUNTIME_ROLE}, {DISPATCHER_ROLE} TO {member};",
        "-- then run `manage.py migrate`: migration 0002 applies the exact grants below.",
    ]
    if not owner:
        lines.insert(3, "-- <migration owner>: the database user that runs `manage.py migrate`.")
    for table, (whole, by_column) in RUNTIME_GRANTS.items():
        parts = list(whole) + [f"{p} ({', '.join(c)})" for p, c in by_column.items()]
        if not parts:
            continue  # e.g. the heartbeat table: the runtime writes it through a function
        lines.append(f"GRANT {', '.join(parts)} ON {table} TO {RUNTIME_ROLE};")
    lines.append(
        f"GRANT SELECT ({', '.join(DISPATCHER_COLUMNS)}) ON durable_schedule_dispatch "
        f"TO {DISPATCHER_ROLE};"
    )
    for fn in DISPATCHER_FUNCTIONS:
        lines.append(f"GRANT EXECUTE ON FUNCTION {fn} TO {DISPATCHER_ROLE};")
    for fn in RUNTIME_FUNCTIONS:
        lines.append(f"GRANT EXECUTE ON FUNCTION {fn} TO {RUNTIME_ROLE};")
    return "\n".join(lines)
