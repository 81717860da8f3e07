"""``manage.py durable_recover``: bump the runtime epoch after a restore, and release schedules
that the epoch fence suspended, with a dry run (issue 5 item 6)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from durable_schedule.operations.recovery import bump_runtime_epoch, release_all


class Command(BaseCommand):
    help = ("--bump-epoch fences every schedule after a restore; --release-all releases the "
            "schedules suspended for runtime_epoch_mismatch. --dry-run changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--bump-epoch", action="store_true")
        parser.add_argument("--release-all", action="store_true")
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--actor", default="durable_recover",
                            help="recorded in each schedule's history")

    def handle(self, *args, **options):
        if not options["bump_epoch"] and not options["release_all"]:
            raise CommandError("DS406: choose --bump-epoch and/or --release-all")
        dry = options["dry_run"]
        prefix = "dry run: " if dry else ""
        if options["bump_epoch"]:
            bump = bump_runtime_epoch(dry_run=dry)
            self.stdout.write(f"{prefix}runtime epoch {bump.before} -> {bump.after}")
        failed = False
        if options["release_all"]:
            for o in release_all(actor=options["actor"], dry_run=dry):
                self.stdout.write(f"{prefix}{o.scope_id}/{o.schedule_id}: {o.detail}")
                failed |= not o.released and o.detail.startswith("DS")
        if failed:
            sys.exit(1)
