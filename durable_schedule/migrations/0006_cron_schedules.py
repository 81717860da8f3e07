from django.db import migrations, models

from durable_schedule.store.forward_only import RefuseReverse
from durable_schedule.store.sqlfiles import read


def _irreversible(apps, schema_editor):
    raise RuntimeError(
        "durable_schedule migration 0006_cron_schedules is irreversible: cron generations are "
        "append-only history and schema 6 raised the compatibility floor (restore a backup "
        "taken before the migration instead)."
    )


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0005_operations_health")]

    operations = [
        migrations.RunSQL(
            read("0007_cron_schedules.sql"),
            reverse_sql=migrations.RunSQL.noop,
            state_operations=[
                migrations.RemoveConstraint("schedulegeneration",
                                            "durable_schedule_generation_kind"),
                migrations.AddConstraint("schedulegeneration", models.CheckConstraint(
                    condition=models.Q(kind__in=["at", "after", "every", "cron"]),
                    name="durable_schedule_generation_kind")),
            ],
        ),
        migrations.RunPython(migrations.RunPython.noop, reverse_code=_irreversible),
        # Reversed first: Django's IrreversibleError (DS409) before anything is unapplied.
        RefuseReverse("0006_cron_schedules"),
    ]
