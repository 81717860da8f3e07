from django.db import migrations, models

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0011_claim_limits")]

    # The generation table is a managed model (its append-only trigger is pgtrigger's), so its
    # new column is declared to Django's state here and written by the SQL file (as in 0010).
    # Forward-only: RefuseReverse, last, is the first operation a reverse reaches (DS409).
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[run_sql_file("0013_buffer_all.sql")],
            state_operations=[
                migrations.AddField("schedulegeneration", "buffer_limit",
                                    models.IntegerField(null=True)),
            ],
        ),
        RefuseReverse("0012_buffer_all"),
    ]
