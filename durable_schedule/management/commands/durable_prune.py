"""``manage.py durable_prune --older-than 30d [--dry-run] [--batch N] [--margin 1d | --rescan]``:
retention.

Removes the permits, quarantine rows and history of terminal Work finished before the cutoff,
occurrences nothing can need again and old runner heartbeats, in batches of ``--batch`` rows,
each batch its own transaction. Keeps every ``durable_work`` row: compare-or-return answers a
retried enqueue from it (docs/operations.md "Retention"). ``--dry-run`` counts and changes
nothing. Safe to run while runners run, and to interrupt: a rerun continues. Each run reads
again ``--margin`` (default 1d) before where the previous one stopped; ``--rescan`` reads
everything, after the database clock stepped back further than that.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from durable_schedule.errors import DurableError, InvalidPruneRescan
from durable_schedule.operations.commanderrors import stopped
from durable_schedule.operations.retention import MAX_BATCH, parse_age, parse_margin, prune
from durable_schedule.runner.cli import whole_number


class Command(BaseCommand):
    help = "Prune what retention allows (docs/operations.md \"Retention\")."

    def add_arguments(self, parser):
        parser.add_argument("--older-than", required=True,
                            help="age, e.g. 30d, 12h, 90m, 2w (at least 1h)")
        parser.add_argument("--dry-run", action="store_true", help="count, change nothing")
        parser.add_argument("--batch", type=whole_number, default=500,
                            help=f"rows per transaction, 1-{MAX_BATCH} (default 500)")
        parser.add_argument("--margin", default=None,
                            help="how far before where the last run stopped to read again, "
                                 "e.g. 2d, 12h (default 1d)")
        parser.add_argument("--rescan", action="store_true",
                            help="read every scope's terminal Work in full: the database clock "
                                 "stepped back by more than the margin")

    def handle(self, *args, **options):
        try:
            age = parse_age(options["older_than"])
            if options["rescan"] and options["margin"] is not None:
                raise InvalidPruneRescan("--rescan reads every scope in full: a --margin means "
                                         "nothing with it", got=options["margin"])
            margin = None if options["margin"] is None else parse_margin(options["margin"])
            counts = prune(age, dry_run=options["dry_run"], batch=options["batch"],
                           margin=margin, rescan=options["rescan"])
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:  # DS307: one line, with what the batches before removed
            raise stopped("durable_prune", exc) from exc
        verb = "would remove" if counts.dry_run else "removed"
        self.stdout.write(
            f"{verb} (older than {age}, {counts.scopes} scopes): "
            f"history of {counts.work} terminal Work ({counts.work_history} history rows, "
            f"{counts.permits} permits, {counts.quarantine} quarantine rows), "
            f"{counts.occurrences} occurrences, {counts.heartbeats} runner heartbeats"
            + ("" if counts.dry_run else f" in {counts.batches} batches")
            + "; Work rows are kept (identity for compare-or-return)")
        if counts.mark_ahead:
            self.stdout.write(
                f"the retention mark of {counts.mark_ahead} scopes lay after the database's "
                "now (its clock went back): those scopes were read in full"
                + ("" if counts.dry_run else " and their mark written anew"))
        if counts.rescanned:
            self.stdout.write(f"--rescan: {counts.rescanned} scopes were read in full, "
                              "ignoring their mark")
