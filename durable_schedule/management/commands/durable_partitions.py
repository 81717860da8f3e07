"""``manage.py durable_partitions``: create this and next month's schedule history partitions.

``--archive-before YYYY-MM --transcript-dir DIR [--drop] [--dry-run]`` archives older months:
detach, write an audit transcript (JSONL + sha256), and with ``--drop`` verify the transcript
and drop the month (docs/operations.md "Retention").
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from durable_schedule.errors import DurableError
from durable_schedule.operations.partitions import ensure_partitions


class Command(BaseCommand):
    help = "Run ensure_schedule_history_partitions() as the migration owner; archive old months."

    def add_arguments(self, parser):
        parser.add_argument("--archive-before", metavar="YYYY-MM",
                            help="detach and transcribe every month before this one")
        parser.add_argument("--transcript-dir", help="where transcripts are written (required "
                                                     "with --archive-before)")
        parser.add_argument("--drop", action="store_true",
                            help="drop an archived month once its transcript is verified")
        parser.add_argument("--dry-run", action="store_true", help="list, change nothing")

    def handle(self, *args, **options):
        if options["archive_before"]:
            self._archive(options)
            return
        if options["drop"] or options["transcript_dir"]:
            raise CommandError("--drop and --transcript-dir need --archive-before")
        created = ensure_partitions()
        if created:
            for name in created:
                self.stdout.write(f"created {name}")
        else:
            self.stdout.write("partitions for this and next month already exist")

    def _archive(self, options) -> None:
        from durable_schedule.operations.archive import archive_before

        if not options["transcript_dir"]:
            raise CommandError("--archive-before needs --transcript-dir (the audit transcript "
                               "is written before anything is dropped)")
        try:
            outcomes = archive_before(options["archive_before"], options["transcript_dir"],
                                      drop=options["drop"], dry_run=options["dry_run"])
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        if not outcomes:
            self.stdout.write(f"no history month before {options['archive_before']}")
        for o in outcomes:
            if o.dry_run:
                self.stdout.write(f"{o.table}: {'; '.join(o.notes)}")
                continue
            self.stdout.write(
                f"{o.table}: {'detached, ' if o.detached else ''}{o.rows} rows -> "
                f"{o.transcript} (sha256 {o.sha256}){', dropped' if o.dropped else ''}")
