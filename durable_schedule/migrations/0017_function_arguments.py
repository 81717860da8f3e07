from django.db import migrations

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0016_identity_arbiter")]

    # Three function bodies with stricter argument checks: no table or column changes, so
    # nothing to declare to Django's state. Forward-only: RefuseReverse, last, is the first
    # operation a reverse reaches (DS409).
    operations = [
        run_sql_file("0018_function_arguments.sql"),
        RefuseReverse("0017_function_arguments"),
    ]
