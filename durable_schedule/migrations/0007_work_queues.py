from django.db import migrations

from durable_schedule.store.sqlfiles import read


def _irreversible(apps, schema_editor):
    raise RuntimeError(
        "durable_schedule migration 0007_work_queues is irreversible: the store is "
        "forward-only (restore a backup taken before the migration instead)."
    )


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0006_cron_schedules")]

    operations = [
        migrations.RunSQL(read("0008_work_queues.sql"), reverse_sql=migrations.RunSQL.noop),
        migrations.RunPython(migrations.RunPython.noop, reverse_code=_irreversible),
    ]
