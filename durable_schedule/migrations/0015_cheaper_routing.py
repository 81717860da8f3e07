from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0014_cheaper_acceptance")]

    # Three function bodies and one row type (docs/benchmarks.md "Acceptance, fifth look"): no
    # table or column changes, so nothing to declare to Django's state. Forward-only:
    # RefuseReverse, last, is the first operation a reverse reaches (DS409).
    operations = [
        run_sql_file("0016_cheaper_routing.sql"),
        RefuseReverse("0015_cheaper_routing"),
    ]
