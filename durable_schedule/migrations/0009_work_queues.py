from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0008_hardening")]

    operations = [
        run_sql_file("0010_work_queues.sql"),
        RefuseReverse("0009_work_queues"),
    ]
