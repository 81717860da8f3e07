from django.db import migrations, models

from durable_schedule.store.sqlfiles import read


class Migration(migrations.Migration):
    dependencies = [("durable_schedule", "0004_runner")]

    # Forward-only (docs/operations.md): no reverse SQL, so Django refuses to unapply it with
    # IrreversibleError instead of leaving a half-removed store.
    operations = [
        migrations.RunSQL(read("0006_operations_health.sql")),
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
    ]
