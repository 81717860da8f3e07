"""``manage.py durable_recover``: bump the runtime epoch after a restore, release schedules
that the epoch fence suspended, and re-provision a scope (bump its generation), each with a dry
run (docs/operations.md "Recovery after a restore", "Re-provisioning a scope")."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from durable_schedule.errors import DurableError
from durable_schedule.operations.commanderrors import stopped
from durable_schedule.operations.provisioning import reprovision_scope
from durable_schedule.operations.recovery import bump_runtime_epoch, release_all
from durable_schedule.schedules.validation import actor as check_actor


class Command(BaseCommand):
    help = ("--bump-epoch fences every schedule after a restore; --release-all releases the "
            "schedules suspended for runtime_epoch_mismatch; --reprovision-scope SCOPE bumps "
            "that scope's generation (its schedules suspend for scope_generation_mismatch "
            "until schedules.update()). --dry-run changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--bump-epoch", action="store_true")
        parser.add_argument("--release-all", action="store_true")
        parser.add_argument("--reprovision-scope", action="append", default=[], metavar="SCOPE",
                            help="bump this scope's generation (repeatable)")
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--actor", default="durable_recover",
                            help="recorded in each schedule's history")

    def handle(self, *args, **options):
        if (not options["bump_epoch"] and not options["release_all"]
                and not options["reprovision_scope"]):
            raise CommandError("DS406: choose --bump-epoch, --release-all and/or "
                               "--reprovision-scope SCOPE")
        try:
            self._run(options)
        except DatabaseError as exc:  # DS307: each step commits on its own
            raise stopped("durable_recover", exc, before=(
                "nothing (dry run)" if options["dry_run"] else "the steps printed above"),
            ) from exc

    def _run(self, options):
        dry = options["dry_run"]
        prefix = "dry run: " if dry else ""
        self._check_inputs(options)
        if options["bump_epoch"]:
            bump = bump_runtime_epoch(dry_run=dry)
            self.stdout.write(f"{prefix}runtime epoch {bump.before} -> {bump.after}")
        for scope in options["reprovision_scope"]:
            try:
                done = reprovision_scope(scope, dry_run=dry)
            except DurableError as exc:
                raise CommandError(str(exc)) from exc
            fenced = ", ".join(done.fenced_schedules) or "none"
            self.stdout.write(f"{prefix}scope {done.scope_id} generation {done.generation_before}"
                              f" -> {done.generation_after}; schedules that suspend on their "
                              f"next pass: {fenced}")
        failed = False
        if options["release_all"]:
            for o in release_all(actor=options["actor"], dry_run=dry):
                self.stdout.write(f"{prefix}{o.scope_id}/{o.schedule_id}: {o.detail}")
                failed |= not o.released and o.detail.startswith("DS")
        if failed:
            sys.exit(1)

    @staticmethod
    def _check_inputs(options) -> None:
        """Refuse a bad --actor or --reprovision-scope before any step runs: the steps commit
        one by one, so a bad value found at its own step would leave the epoch bumped or an
        earlier scope re-provisioned behind the error."""
        try:
            if options["release_all"]:
                check_actor(options["actor"])
            for scope in options["reprovision_scope"]:
                reprovision_scope(scope, dry_run=True)  # DS30x for a bad or unknown scope
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
