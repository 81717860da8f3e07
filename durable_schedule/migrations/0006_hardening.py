from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0005_operations_health")]

    operations = [
        run_sql_file("0007_hardening.sql"),
        RefuseReverse("0006_hardening"),
    ]
