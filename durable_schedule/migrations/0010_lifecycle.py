from django.db import migrations, models

from durable_schedule.store.forward_only import RefuseReverse
from durable_schedule.store.sqlfiles import read


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0009_work_queues")]

    # The generation table is a managed model (its append-only trigger is pgtrigger's), so its
    # new columns are declared to Django's state here and written by the SQL file.
    # Forward-only (docs/security.md): RefuseReverse, last, is the first operation a reverse
    # reaches, and raises DS409 -- stored rows may already use the widened states and kinds.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(read("0011_lifecycle.sql"),
                                  reverse_sql=migrations.RunSQL.noop),
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
                # Admin polish (docs/admin.md): plural names, the Work operations' permissions.
                migrations.AlterModelOptions("scheduledispatch", {
                    "verbose_name": "schedule dispatch",
                    "verbose_name_plural": "schedule dispatches",
                    "db_table": "durable_schedule_dispatch", "managed": False,
                    "default_permissions": ("view",),
                }),
                migrations.AlterModelOptions("workdispatch", {
                    "verbose_name": "work dispatch", "verbose_name_plural": "work dispatches",
                    "db_table": "durable_work_dispatch", "managed": False,
                    "default_permissions": ("view",),
                }),
                migrations.AlterModelOptions("work", {
                    "verbose_name": "work", "verbose_name_plural": "work",
                    "db_table": "durable_work", "managed": False,
                    "default_permissions": ("view",),
                    "permissions": [
                        ("record_work_proof", "Can record Applied/NotApplied proof for Work"),
                        ("cancel_work", "Can cancel pending or suspended Work"),
                        ("resume_work", "Can resume Work suspended for a missing definition"),
                    ],
                }),
            ],
        ),
        RefuseReverse("0010_lifecycle"),
    ]
