"""``manage.py sync_schedules [--dry-run] [--prune [--allow-empty]] [--adopt]``: make the store
match the schedules declared in code (``<app>/schedules.py``; docs/schedules.md "Schedules
declared in code"). Ctrl-C ends it with one line on stderr and exit status 130: before the
sync committed nothing was changed (it is one transaction), after it the report is cut short
(docs/operations.md "Stopping")."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from durable_schedule.errors import DurableError
from durable_schedule.management.interrupts import InterruptedBeforeStart
from durable_schedule.operations.commanderrors import stopped
from durable_schedule.schedules import declared


class Command(InterruptedBeforeStart, BaseCommand):
    help = ("Create declared schedules that are missing, issue a new generation for those that "
            "changed, report (and with --prune delete) synced schedules no longer declared.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="report what would change and change nothing")
        parser.add_argument("--prune", action="store_true",
                            help="delete schedules an earlier sync created that no declaration "
                                 "names any more")
        parser.add_argument("--allow-empty", action="store_true",
                            help="with --prune: go on when no schedule is declared at all "
                                 "(deletes every schedule sync manages); refused otherwise")
        parser.add_argument("--adopt", action="store_true",
                            help="take over an existing schedule sync did not create that a "
                                 "declaration names (one new generation); a conflict otherwise")

    #: True once the declarations are imported and the sync transaction is about to open.
    syncing = False
    #: The sync's summary once it returned (committed, or rolled back for --dry-run).
    synced: str | None = None

    def interruption(self) -> str | None:
        if not self.began:
            return super().interruption()
        if not self.syncing:
            return "while importing the declarations: nothing was changed"
        if self.synced is None:
            return ("before the sync committed: its one transaction rolled back, nothing was "
                    "changed; run it again")
        return f"after the sync ended ({self.synced}); only the report was cut short"

    def handle(self, *args, **options):
        self.began, self.syncing, self.synced = True, False, None
        try:
            # A declaration declare() refuses (a bad spec, DS145, DS117) fails its module's
            # import: one line with its code and the module, as for the sync's own refusals.
            declared.autodiscover()
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        self.syncing = True
        try:
            report = declared.sync(dry_run=options["dry_run"], prune=options["prune"],
                                   allow_empty=options["allow_empty"], adopt=options["adopt"])
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:  # DS307 (a lock held on the schedule tables, a timeout)
            raise stopped("sync_schedules", exc,
                          before="nothing: a sync is one transaction") from exc
        prefix = "dry run: " if options["dry_run"] else ""
        self.synced = prefix + report.summary()
        for line in report.lines():
            self.stdout.write(line)
        self.stdout.write(prefix + report.summary())
        if report.conflicts:
            codes = sorted({why.split(":", 1)[0] for _s, _i, why in report.conflicts})
            raise CommandError(f"{len(report.conflicts)} declaration(s) conflict with the store "
                               f"({', '.join(codes)}; see above); the other declarations were "
                               "applied")
