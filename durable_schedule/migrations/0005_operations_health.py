from django.db import migrations, models

from durable_schedule.store.forward_only import RefuseReverse, run_sql_file


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0004_runner")]

    # Forward-only (docs/operations.md): RefuseReverse (last) raises DS409, Django's
    # IrreversibleError, before anything is unapplied.
    operations = [
        run_sql_file("0006_operations_health.sql"),
        migrations.CreateModel(
            name="RunnerHeartbeat",
            fields=[
                ("runner_id", models.UUIDField(primary_key=True, serialize=False)),
                ("kind", models.TextField()),
                ("lease_owner", models.TextField()),
                ("host", models.TextField()),
                ("pid", models.IntegerField()),
                ("version", models.TextField()),
                ("started_at", models.DateTimeField()),
                ("beat_at", models.DateTimeField()),
                ("last_pass_at", models.DateTimeField(null=True)),
                ("passes", models.BigIntegerField()),
                ("last_counts", models.JSONField()),
                ("stopped_at", models.DateTimeField(null=True)),
            ],
            options={"db_table": "durable_runner_heartbeat", "managed": False,
                     "verbose_name": "runner", "verbose_name_plural": "runners and health",
                     "default_permissions": ("view",)},
        ),
        RefuseReverse("0005_operations_health"),
    ]
