from django.db import migrations, models

from durable_schedule.store.sqlfiles import read


def _irreversible(apps, schema_editor):
    raise RuntimeError("durable_schedule 0005_lifecycle cannot be reversed: it widens states and "
                       "kinds that stored rows may already use; restore a backup instead")


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0004_runner")]

    # The generation table is a managed model (its append-only trigger is pgtrigger's), so its
    # new columns are declared to Django's state here and written by the SQL file.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(read("0006_lifecycle.sql"), reverse_sql=migrations.RunSQL.noop),
                migrations.RunPython(migrations.RunPython.noop, _irreversible),
            ],
            state_operations=[
                migrations.AddField("schedulegeneration", "start_at",
                                    models.DateTimeField(null=True)),
                migrations.AddField("schedulegeneration", "end_at",
                                    models.DateTimeField(null=True)),
                migrations.AddField("schedulegeneration", "max_runs",
                                    models.IntegerField(null=True)),
                migrations.AddField("schedulegeneration", "jitter",
                                    models.DurationField(null=True)),
                migrations.AlterModelOptions("scheduledefinition", {
                    "verbose_name": "schedule",
                    "db_table": "durable_schedule_definition",
                    "managed": False,
                    "default_permissions": ("view",),
                    "permissions": [
                        ("suspend_schedule", "Can suspend a schedule"),
                        ("release_schedule", "Can release a schedule after recovery"),
                        ("delete_schedule", "Can delete a schedule (terminal)"),
                        ("pause_schedule", "Can pause and resume a schedule"),
                        ("trigger_schedule", "Can run a schedule now"),
                        ("reissue_schedule",
                         "Can re-issue a suspended schedule as a new generation"),
                    ],
                }),
            ],
        ),
    ]
