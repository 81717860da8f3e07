"""System checks (docs/protocol/conventions.md rule C8, docs/protocol/storage.md): the store must be
migrated, at or above the compatibility floor, and the runtime roles must exist with their exact
grants. Ids are stable.

The store check is untagged so that a plain ``manage.py check`` runs it (database-tagged checks
only run with ``--database``). While ``manage.py migrate`` runs, the findings migrate itself cures
(a store not yet migrated, a schema older than this code requires) are not reported at all, and
the others are warnings, not errors: migrate must not be blocked by the disease it cures. An
unreachable database is a warning too, so commands that need no database (collectstatic in an
image build) still run.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core import checks
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from durable_schedule import conf
from durable_schedule.errors import TimeZoneSupportOff, UnsupportedDatabase
from durable_schedule.store import inspection
from durable_schedule.store.version import SCHEMA_VERSION


def _migrating() -> bool:
    return len(sys.argv) > 1 and sys.argv[1] == "migrate"


def _migrated_alias() -> str:
    """The alias this ``migrate`` run migrates (its ``--database``, else "default")."""
    args = sys.argv[2:]
    for i, arg in enumerate(args):
        if arg == "--database" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--database="):
            return arg.split("=", 1)[1]
    return DEFAULT_DB_ALIAS


#: The oldest PostgreSQL the store runs on (README "Supported versions"), as server_version_num.
MINIMUM_SERVER_VERSION = 150000


def engine_problem(conn) -> str | None:
    """Why the store cannot live on ``conn`` (not PostgreSQL, or older than 15), or None. An
    unreachable server is None here: the store check says it cannot read the store."""
    if conn.vendor != "postgresql":
        return (f"DATABASES[{conn.alias!r}] uses {conn.settings_dict.get('ENGINE')!r}: "
                "durable_schedule needs PostgreSQL 15 or newer")
    try:
        version = conn.pg_version
    except DatabaseError:
        return None
    if version < MINIMUM_SERVER_VERSION:
        return (f"DATABASES[{conn.alias!r}] is PostgreSQL {version // 10000}."
                f"{version % 10000}: durable_schedule needs PostgreSQL 15 or newer")
    return None


def _unsupported(problem: str) -> checks.CheckMessage:
    return checks.Error(f"DS452: {problem}", hint=UnsupportedDatabase.next_action,
                        id="durable_schedule.E452")


@checks.register()
def check_store(app_configs=None, **kwargs):
    """The store on DURABLE_SCHEDULE['DATABASE'], and on every other alias a durable tasks
    backend names in ``OPTIONS["DATABASE"]``: that backend accepts its tasks' Work there, so an
    unmigrated one failed only at the first ``enqueue`` (DS402), never at ``check``."""
    try:
        aliases = store_aliases()
    except conf.InvalidSettings:
        return []  # no store to read: the settings check (E005) names the setting
    out: list[checks.CheckMessage] = []
    for alias in aliases:
        out.extend(_check_alias(alias))
    return out


def store_aliases() -> list[str]:
    """Every alias the store lives on: DURABLE_SCHEDULE['DATABASE'] first, then each alias a
    durable tasks backend names in ``OPTIONS["DATABASE"]`` (once each). The system check reads
    them all and the migrate hooks of apps.py act on them all. Raises conf.InvalidSettings for
    a malformed DURABLE_SCHEDULE."""
    return list(dict.fromkeys([conf.database_alias(), *_task_backend_aliases()]))


def _task_backend_aliases() -> list[str]:
    """The aliases durable tasks backends (a project's subclass too, which accepts its Work the
    same way) name in ``OPTIONS["DATABASE"]``. A malformed entry is left to the tasks
    framework's own checks and the backend's validation."""
    from durable_schedule.apps import _is_durable_backend

    tasks = getattr(settings, "TASKS", None)
    if not isinstance(tasks, dict):
        return []
    aliases = []
    for entry in tasks.values():
        if not isinstance(entry, dict) or not _is_durable_backend(entry.get("BACKEND")):
            continue
        options = entry.get("OPTIONS")
        alias = options.get("DATABASE") if isinstance(options, dict) else None
        if type(alias) is str and alias in settings.DATABASES:
            aliases.append(alias)
    return aliases


def _check_alias(alias: str) -> list[checks.CheckMessage]:
    level = checks.Warning if _migrating() else checks.Error
    conn = connections[alias]
    # Before reading the store: on SQLite that read said only "no such function: to_regclass",
    # and migrate then stopped at a SQL syntax error. The server version is asked once the
    # cursor has connected, so an unreachable server costs one connection attempt, not two.
    if conn.vendor != "postgresql":
        return [_unsupported(engine_problem(conn))]
    try:
        with conn.cursor() as cur:
            problem = engine_problem(conn)
            if problem is not None:
                return [_unsupported(problem)]
            report = inspection.schema_report(cur)
    except DatabaseError as exc:
        return [checks.Warning(f"cannot read the durable_schedule store on DATABASES[{alias!r}]: "
                               f"{exc}", id="durable_schedule.W004")]
    curing = _migrating() and _migrated_alias() == alias  # this migrate builds the store
    if not report.migrated:
        # While migrate runs on the store's alias, it is the command that creates the store:
        # saying "not migrated" to the one command that fixes it is noise (and alarms a
        # newcomer), so say nothing. A migrate of another alias leaves the store as it is: say
        # so (a warning, it must not block that migrate), naming the command that builds it.
        if curing:
            return []
        return [level(f"DS402: the durable_schedule store is not migrated on "
                      f"DATABASES[{alias!r}]", hint=f"Run `{migrate_command(alias)}`.",
                      id="durable_schedule.E001")]
    errors: list[checks.CheckMessage] = []
    if report.below_floor and not (curing and (report.schema_version or 0) < report.required):
        errors.append(level(
            f"DS401: database schema {report.schema_version} (compatibility floor "
            f"{report.compatibility_floor}) does not fit this code, which requires schema >= "
            f"{report.required} and is schema {SCHEMA_VERSION}",
            hint=f"Older database: run `{migrate_command(alias)}`. Newer floor: deploy the "
                 "code that matches the migrated schema.",
            id="durable_schedule.E002"))
    for problem in report.role_problems:
        errors.append(level(
            f"DS304: {problem}",
            hint="Apply the recipe printed by `manage.py durable_status --roles`.",
            id="durable_schedule.E003"))
    return errors


def migrate_command(alias: str) -> str:
    """The command that migrates the store's database: a plain ``migrate`` migrates the
    ``default`` alias only (also what durable_status's DS401/DS402 problems tell to run)."""
    if alias == DEFAULT_DB_ALIAS:
        return "manage.py migrate"
    return f"manage.py migrate --database {alias}"


@checks.register()
def check_settings(app_configs=None, **kwargs):
    try:
        conf.validate()
    except ValueError as exc:
        return [checks.Error(str(exc), id="durable_schedule.E005")]
    return []


@checks.register()
def check_time_zone_support(app_configs=None, **kwargs):
    """USE_TZ = False makes Django read every timestamptz as a naive local time: Work would be
    accepted that no runner can execute (DS450). Said at start-up, before the first call."""
    if settings.USE_TZ:
        return []
    return [checks.Error("DS450: durable_schedule needs USE_TZ = True",
                         hint=TimeZoneSupportOff.next_action, id="durable_schedule.E450")]
