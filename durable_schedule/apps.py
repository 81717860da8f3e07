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
