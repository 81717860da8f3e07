from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0007_acceptance")]

    operations = [
        run_sql_file("0009_hardening.sql"),
        RefuseReverse("0008_hardening"),
    ]
