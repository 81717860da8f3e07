from django.apps import AppConfig
from django.db.models.signals import post_migrate


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


class DurableScheduleConfig(AppConfig):
    name = "durable_schedule"
    verbose_name = "Durable schedule"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks (docs/protocol/storage.md: "a Django system check reports the
        # same").
        from durable_schedule import checks  # noqa: F401
        from durable_schedule.operations import deploy_checks  # noqa: F401  (check --deploy)

        post_migrate.connect(_revoke_public_execute, dispatch_uid="durable_schedule_no_public")
        # The tasks backend first: a user's work.py may define tasks that resolve through it.
        _load_tasks_backend()
        _autodiscover_work()


def _load_tasks_backend() -> None:
    """Import the tasks backend when TASKS names it, so a worker resolves task Work by module
    path without importing every task module first (docs/tasks.md)."""
    from django.conf import settings

    configured = getattr(settings, "TASKS", None) or {}
    if any(str(params.get("BACKEND", "")).startswith("durable_schedule.tasks")
           for params in configured.values() if isinstance(params, dict)):
        import durable_schedule.tasks  # noqa: F401


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
