from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0010_lifecycle")]

    operations = [
        run_sql_file("0012_claim_limits.sql"),
        RefuseReverse("0011_claim_limits"),
    ]
