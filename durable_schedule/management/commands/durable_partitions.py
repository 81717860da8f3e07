"""``manage.py durable_partitions``: create this and next month's schedule history partitions
(``--dry-run``: list the ones a run would create, create none).

``--archive-before YYYY-MM --transcript-dir DIR [--drop] [--dry-run]`` archives older months:
detach, write an audit transcript (JSONL + sha256), and with ``--drop`` verify the transcript
and drop the month (docs/operations.md "Retention").
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, transaction

from durable_schedule.errors import DurableError
from durable_schedule.operations.commanderrors import stopped
from durable_schedule.operations.partitions import ensure_partitions
from durable_schedule.store.transactions import connection


class Command(BaseCommand):
    help = "Run ensure_schedule_history_partitions() as the migration owner; archive old months."

    def add_arguments(self, parser):
        parser.add_argument("--archive-before", metavar="YYYY-MM",
                            help="detach and transcribe every month before this one")
        parser.add_argument("--transcript-dir", help="where transcripts are written (required "
                                                     "with --archive-before)")
        parser.add_argument("--drop", action="store_true",
                            help="drop an archived month once its transcript is verified")
        parser.add_argument("--dry-run", action="store_true",
                            help="list what would be created or archived, change nothing")

    def handle(self, *args, **options):
        try:
            self._handle(options)
        except DatabaseError as exc:  # DS307 (a lock held on the history table, a timeout)
            raise stopped("durable_partitions", exc, before=(
                "the months already detached, transcribed or dropped (each month commits on "
                "its own; a rerun goes on from there)" if options["archive_before"] else
                "nothing: the partitions are created in one transaction")) from exc

    def _handle(self, options):
        if options["archive_before"]:
            self._archive(options)
            return
        if options["drop"] or options["transcript_dir"]:
            raise CommandError("DS406: --drop and --transcript-dir need --archive-before "
                               "(nothing was changed)")
        if options["dry_run"]:
            created = self._rolled_back_run()
        else:
            created = ensure_partitions()
        verb = "would create" if options["dry_run"] else "created"
        if created:
            for name in created:
                self.stdout.write(f"{verb} {name}")
        else:
            self.stdout.write("partitions for this and next month already exist")

    @staticmethod
    def _rolled_back_run() -> list[str]:
        """The partitions a run would create: the run itself, rolled back (PostgreSQL DDL is
        transactional), so the list is exactly what the SQL function decides."""
        alias = connection().alias
        with transaction.atomic(using=alias):
            created = ensure_partitions(using=alias)
            transaction.set_rollback(True, using=alias)
        return created

    def _archive(self, options) -> None:
        from durable_schedule.operations.archive import archive_before

        if not options["transcript_dir"]:
            raise CommandError("DS406: --archive-before needs --transcript-dir (the audit "
                               "transcript is written before anything is dropped; nothing was "
                               "changed)")
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
