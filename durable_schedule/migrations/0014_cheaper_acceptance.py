from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0013_cheaper_triggers")]

    # One function and one trigger (docs/benchmarks.md "Acceptance, fourth look"): no table or
    # column changes, so nothing to declare to Django's state. Forward-only: RefuseReverse,
    # last, is the first operation a reverse reaches (DS409).
    operations = [
        run_sql_file("0015_cheaper_acceptance.sql"),
        RefuseReverse("0014_cheaper_acceptance"),
    ]
