"""``manage.py durable_partitions``: create this and next month's schedule history partitions."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from durable_schedule.operations.partitions import ensure_partitions


class Command(BaseCommand):
    help = "Run ensure_schedule_history_partitions() as the migration owner."

    def handle(self, *args, **options):
        created = ensure_partitions()
        if created:
            for name in created:
                self.stdout.write(f"created {name}")
        else:
            self.stdout.write("partitions for this and next month already exist")
