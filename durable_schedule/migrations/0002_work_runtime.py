from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse
from durable_schedule.store.sqlfiles import read


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0001_initial")]

    operations = [
        migrations.RunSQL(read("0003_work_runtime.sql"), reverse_sql=migrations.RunSQL.noop),
        # Forward-only store: reversing raises DS409 before anything changes.
        RefuseReverse("0002_work_runtime"),
    ]
