from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate


def _revoke_public_execute(sender, using="default", **kwargs) -> None:
    """After every ``migrate`` (docs/security.md "Functions"): no store function may stay
    executable by PUBLIC, including one django-pgtrigger's own post_migrate installer created
    for a new trigger. Connected without a sender, so it also runs after pgtrigger's handler
    whatever the order of INSTALLED_APPS; idempotent and one catalog query when nothing is open."""
    from django.db import connections

    from durable_schedule.store.inspection import revoke_public_execute

    conn = connections[using]
    if conn.vendor != "postgresql":
        return
    with conn.cursor() as cur:
        cur.execute("select to_regclass('durable_schedule_store') is not null")
        if cur.fetchone()[0]:
            revoke_public_execute(cur)


def _complete_role_memberships(sender, using="default", **kwargs) -> None:
    """After every ``migrate``: on PostgreSQL 16 and newer a CREATEROLE user that created the two
    roles holds them with ADMIN OPTION only (no SET), which migration 0001's roles step took for
    a membership, so every scoped call then failed with DS302 "permission denied to set role".
    The user grants itself the plain membership the step means (as it does on PostgreSQL 15).
    Idempotent, one catalog query when nothing is missing; also heals a store migrated before."""
    from django.db import connections

    from durable_schedule.checks import store_aliases
    from durable_schedule.store.inspection import DISPATCHER_ROLE, RUNTIME_ROLE
    from durable_schedule.store.sqlfiles import query

    conn = connections[using]
    if using not in store_aliases() or conn.vendor != "postgresql":
        # Not only DURABLE_SCHEDULE['DATABASE']: a durable tasks backend's OPTIONS["DATABASE"]
        # holds a store too, and a creator there would otherwise fail every call with DS302.
        return
    with conn.cursor() as cur:
        cur.execute(query("inspection_queries.sql", "roles_owner_may_grant_itself_set"),
                    [[RUNTIME_ROLE, DISPATCHER_ROLE]])
        for (role,) in cur.fetchall():
            # The role names are the package's constants, never input.
            cur.execute(f"GRANT {role} TO CURRENT_USER")


def _refuse_roles_the_owner_cannot_join(sender, using="default", plan=None, **kwargs) -> None:
    """Before ``migrate`` applies migration 0001 (its roles step creates or joins the two NOLOGIN
    roles, docs/getting-started.md "The database user"): a database that is not PostgreSQL 15+
    is refused (DS452), and a user that can neither create a missing role nor join an existing
    one is stopped here, before anything is migrated, with DS304 and the one GRANT a DBA runs,
    instead of PostgreSQL's bare "must have admin option on role" from inside the migration."""
    from django.core.management import CommandError
    from django.db import connections

    from durable_schedule.checks import store_aliases

    if using not in store_aliases() or not any(
            migration.app_label == "durable_schedule" and migration.name == "0001_initial"
            and not backwards for migration, backwards in plan or ()):
        # A database the store does not live on (its plan lists every app; the store lives on
        # DURABLE_SCHEDULE['DATABASE'] and each durable tasks backend's OPTIONS["DATABASE"]),
        # or no roles step.
        return
    from durable_schedule.checks import engine_problem
    from durable_schedule.errors import UnsupportedDatabase

    conn = connections[using]
    engine = engine_problem(conn)
    if engine is not None:
        # Also for ``migrate --skip-checks`` and call_command("migrate"), which skip the system
        # check E452: the first statement would fail with a bare SQL syntax error.
        raise CommandError(str(UnsupportedDatabase(engine)))
    if conn.vendor != "postgresql":
        return  # unreachable: engine_problem names every other vendor
    with conn.cursor() as cur:
        problem = roles_problem(cur)
    if problem is not None:
        raise CommandError(str(problem))


def roles_problem(cur):
    """The RolesMissing (DS304) error for the current user, or None when it can create or join
    both roles (store/sql/inspection_queries.sql ``roles_owner_cannot_join``)."""
    from durable_schedule.errors import RolesMissing
    from durable_schedule.store.inspection import DISPATCHER_ROLE, RUNTIME_ROLE, grant_recipe
    from durable_schedule.store.sqlfiles import query

    cur.execute(query("inspection_queries.sql", "roles_owner_cannot_join"),
                [[RUNTIME_ROLE, DISPATCHER_ROLE]])
    rows = cur.fetchall()
    if not rows:
        return None
    cur.execute("select current_user")
    user = cur.fetchone()[0]
    missing = [role for role, is_missing in rows if is_missing]
    unjoinable = [role for role, is_missing in rows if not is_missing]
    said = []
    if missing:
        said.append(f"{' and '.join(missing)} missing and {user} may not create roles")
    if unjoinable:
        said.append(f"{' and '.join(unjoinable)} existing, and {user} is no member and may not "
                    "grant them (PostgreSQL 16+: only to roles it has ADMIN OPTION on)")
    recipe = [line for line in grant_recipe(user).splitlines()[:3]
              if not line.startswith("CREATE ROLE") or any(r in line for r in missing)]
    return RolesMissing(f"the database user cannot enter the store's roles: {'; '.join(said)}. "
                        f"Nothing was migrated. A DBA runs once: {' '.join(recipe)} "
                        "(manage.py durable_status --roles prints the whole recipe)")


class DurableScheduleConfig(AppConfig):
    name = "durable_schedule"
    verbose_name = "Durable schedule"
    default_auto_field = "django.db.models.BigAutoField"

    def import_models(self) -> None:
        # The models declare Meta.triggers, an option only django-pgtrigger's app adds: without
        # it Django stops at "'class Meta' got invalid attribute(s): triggers". Say what is
        # missing instead (every app config exists by now, so is_installed can answer).
        if not self.apps.is_installed("pgtrigger"):
            from durable_schedule.errors import PgtriggerNotInstalled

            raise PgtriggerNotInstalled("INSTALLED_APPS lists durable_schedule without pgtrigger")
        super().import_models()

    def ready(self) -> None:
        # Registers the system checks (docs/protocol/storage.md: "a Django system check reports the
        # same").
        from durable_schedule import checks  # noqa: F401
        from durable_schedule.operations import deploy_checks  # noqa: F401  (check --deploy)

        post_migrate.connect(_revoke_public_execute, dispatch_uid="durable_schedule_no_public")
        post_migrate.connect(_complete_role_memberships, sender=self,
                             dispatch_uid="durable_schedule_role_memberships")
        pre_migrate.connect(_refuse_roles_the_owner_cannot_join, sender=self,
                            dispatch_uid="durable_schedule_roles_joinable")
        # The tasks backend first: a user's work.py may define tasks that resolve through it.
        _load_tasks_backend()
        _autodiscover_work()


def _load_tasks_backend() -> None:
    """Import the tasks backend when TASKS names it, so a worker resolves task Work by module
    path without importing every task module first (docs/tasks.md)."""
    from django.conf import settings

    configured = getattr(settings, "TASKS", None) or {}
    if any(_is_durable_backend(params.get("BACKEND"))
           for params in configured.values() if isinstance(params, dict)):
        import durable_schedule.tasks  # noqa: F401


def _is_durable_backend(path: object) -> bool:
    """Whether ``BACKEND`` names the durable backend or a project's subclass of it. Only the
    path was compared before: with a subclass (``myproject.tasks.Backend``) a fresh worker,
    which never touched ``task_backends``, registered no resolver and suspended every task's
    Work as an unknown definition. A path that does not import is left to Django, which
    reports it when the backend is first used."""
    if not isinstance(path, str):
        return False
    if path.startswith("durable_schedule.tasks"):
        return True
    from django.utils.module_loading import import_string

    try:
        backend = import_string(path)
    except Exception:  # noqa: BLE001 -- not ours to report here (see above)
        return False
    return isinstance(backend, type) and any(
        f"{base.__module__}.{base.__qualname__}" == "durable_schedule.tasks.backend."
        "DurableBackend" for base in backend.__mro__)


def _autodiscover_work() -> None:
    """Import every installed app's ``work`` module (docs/work.md "Where definitions live"), so
    resume, trigger and the admin's re-issue resolve a stored target in any process without a
    manual ``work.autodiscover()``. All models are loaded by now (ready() runs after every app's
    models), so a work.py may import them. An error raised by a work.py is not swallowed: the
    process would otherwise run without those definitions and fail later, further from the
    cause."""
    from durable_schedule import conf
    from durable_schedule.work import autodiscover

    try:
        enabled = conf.autodiscover()
    except conf.InvalidSettings:
        # DURABLE_SCHEDULE is no dict: the settings check (E005) says so with the setting's
        # name, and every use raises the same error; a traceback from django.setup() would
        # hide the check's message from `manage.py check`.
        return
    if enabled:
        autodiscover()
