from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("number", models.IntegerField()),
            ],
            options={"db_table": "demo_order"},
        ),
        migrations.CreateModel(
            name="Effect",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("work_id", models.UUIDField()),
                ("attempt", models.IntegerField()),
                ("key", models.TextField()),
            ],
            options={"db_table": "demo_effect"},
        ),
    ]
