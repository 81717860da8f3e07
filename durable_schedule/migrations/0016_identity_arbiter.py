from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0015_cheaper_routing")]

    # One function body (docs/benchmarks.md "Acceptance, sixth look"): no table or column
    # changes, so nothing to declare to Django's state. Forward-only: RefuseReverse, last, is
    # the first operation a reverse reaches (DS409).
    operations = [
        run_sql_file("0017_identity_arbiter.sql"),
        RefuseReverse("0016_identity_arbiter"),
    ]
