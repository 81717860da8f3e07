from django.apps import AppConfig


class DurableScheduleConfig(AppConfig):
    name = "durable_schedule"
    verbose_name = "Durable schedule"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks (docs/protocol/storage.md: "a Django system check reports the
        # same").
        from durable_schedule import checks  # noqa: F401
        from durable_schedule.operations import deploy_checks  # noqa: F401  (check --deploy)

        _load_tasks_backend()


def _load_tasks_backend() -> None:
    """Import the tasks backend when TASKS names it, so a worker resolves task Work by module
    path without importing every task module first (docs/tasks.md)."""
    from django.conf import settings

    configured = getattr(settings, "TASKS", None) or {}
    if any(str(params.get("BACKEND", "")).startswith("durable_schedule.tasks")
           for params in configured.values() if isinstance(params, dict)):
        import durable_schedule.tasks  # noqa: F401
