from django.db import migrations, models
from django.db.migrations.exceptions import IrreversibleError

from durable_schedule.store.forward_only import RefuseReverse
from durable_schedule.store.sqlfiles import read


def _forward_only(apps, schema_editor):
    raise IrreversibleError(
        "durable_schedule migrations are forward-only (docs/operations.md): 0006_acceptance "
        "added the accepted due time and the acceptance functions; reversing would leave the "
        "schema in place while Django forgot it. Restore a backup instead."
    )


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0006_cron_schedules")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(read("0008_acceptance.sql"),
                                  reverse_sql=migrations.RunSQL.noop),
            ],
            # Work is an unmanaged mirror of the SQL table: the column exists in Django's state
            # only so the admin and the model-column test see it.
            state_operations=[
                migrations.AddField("work", "accepted_due_at",
                                    models.DateTimeField(null=True)),
            ],
        ),
        migrations.RunPython(migrations.RunPython.noop, _forward_only),
        # Reversed first: Django's IrreversibleError (DS409) before anything is unapplied.
        RefuseReverse("0007_acceptance"),
    ]
