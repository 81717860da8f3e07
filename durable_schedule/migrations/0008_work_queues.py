from django.db import migrations

from durable_schedule.store.sqlfiles import read


def _irreversible(apps, schema_editor):
    raise RuntimeError(
        "durable_schedule migration 0008_work_queues is irreversible: the store is "
        "forward-only (restore a backup taken before the migration instead)."
    )


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0007_acceptance")]

    operations = [
        migrations.RunSQL(read("0009_work_queues.sql"), reverse_sql=migrations.RunSQL.noop),
        migrations.RunPython(migrations.RunPython.noop, reverse_code=_irreversible),
    ]
