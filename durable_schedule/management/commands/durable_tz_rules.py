"""``manage.py durable_tz_rules [--apply] [--json] [--actor NAME]``: the cron schedules a
tz-rules change affects (docs/schedules.md "Time-zone rules fingerprint").

Dry run by default: lists every live cron schedule whose persisted rules fingerprint differs
from the rules this process loads, with both fingerprints and the first instant the change
would move. ``--apply`` re-issues each of them through the public update path (a new
generation bound to the current rules, which also clears a ``tz_rules_changed`` suspension).
A schedule suspended for another reason than ``tz_rules_changed`` (an operator's stop, a
clock jump, ...) is *held*: re-issuing it would lift that suspension, so ``--apply`` leaves it
to its own repair (an update, which binds the rules in force). Exit status 0 when nothing is
(left) affected, 1 when a dry run found affected schedules, ``--apply`` held one, or could not
re-issue one (it changed since it was read: its DS code is printed, the others are
re-issued). A database error ends the command with one DS307 line naming the schedules already
re-issued.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from durable_schedule.errors import DurableError, InvalidTzRulesCommand
from durable_schedule.operations import tz_rules
from durable_schedule.operations.commanderrors import stopped
from durable_schedule.schedules.validation import actor as check_actor


class Command(BaseCommand):
    help = "List cron schedules whose time-zone rules changed; --apply re-issues them."

    def add_arguments(self, parser):
        parser.add_argument("--apply", action="store_true",
                            help="re-issue the affected schedules as new generations")
        parser.add_argument("--json", action="store_true", help="print one JSON document")
        parser.add_argument("--actor", default="durable_tz_rules",
                            help="the actor recorded in the schedules' history")

    def handle(self, *args, **options):
        try:
            actor = check_actor(options["actor"])
        except DurableError as exc:
            raise CommandError(str(InvalidTzRulesCommand("--actor is not valid",
                                                         detail=exc.message))) from None
        reissued: list[dict] = []
        refused: list[dict] = []
        try:
            inventory = tz_rules.collect()
            affected = inventory.affected
            if options["apply"]:
                for item in affected:
                    if item.held:  # its own repair binds the rules; a re-issue would lift it
                        continue
                    try:
                        info = tz_rules.reissue(item, actor=actor)
                    except DurableError as exc:  # changed since it was read: the rest go on
                        refused.append({"scope_id": item.scope_id,
                                        "schedule_id": item.schedule_id,
                                        "error": f"{exc.code}: {exc.message}"})
                        continue
                    reissued.append({"scope_id": item.scope_id, "schedule_id": item.schedule_id,
                                     "generation": info.generation, "revision": info.revision})
        except DatabaseError as exc:  # DS307: each re-issue commits on its own
            done = ", ".join(f"{r['scope_id']}/{r['schedule_id']}" for r in reissued)
            raise stopped("durable_tz_rules", exc, before=(
                f"re-issued {done}" if done else "nothing")) from exc
        if options["json"]:
            doc = inventory.to_json()
            doc["applied"] = bool(options["apply"])
            doc["reissued"] = reissued
            doc["refused"] = refused
            self.stdout.write(json.dumps(doc, indent=2, sort_keys=True))
        else:
            self._print(inventory, reissued, options["apply"], refused)
        if (affected and not options["apply"]) or refused or inventory.held:
            sys.exit(1)

    def _print(self, inventory, reissued, applied: bool, refused: list[dict]) -> None:
        w = self.stdout.write
        for row in inventory.rules_in_use():
            w(f"rules   {row['tz']} {row['fingerprint'][:16]}: {row['schedules']} schedules, "
              f"{row['mismatched']} mismatched")
        for s in inventory.schedules:
            if s.error is not None:
                w(f"unreadable {s.scope_id}/{s.schedule_id}: {s.error}")
        for s in inventory.affected:
            moved = s.first_moved_instant
            what = "no instant in the window moves" if moved is None else (
                f"first moved: {moved['wall']} local, {moved['utc_old_rules']} -> "
                f"{moved['utc_new_rules']}")
            w(f"affected {s.scope_id}/{s.schedule_id} ({s.tz}, {s.state}"
              f"{', ' + s.suspension_reason if s.suspension_reason else ''}): persisted "
              f"{s.persisted_fingerprint[:16]} current {s.current_fingerprint[:16]}; {what}"
              f"{'; held (--apply leaves it to its own repair)' if s.held else ''}")
        if applied:
            for r in reissued:
                w(self.style.SUCCESS(f"re-issued {r['scope_id']}/{r['schedule_id']} as "
                                     f"generation {r['generation']}"))
            for r in refused:
                w(self.style.ERROR(f"not re-issued {r['scope_id']}/{r['schedule_id']}: "
                                   f"{r['error']} (re-run to see it as it is now)"))
            for s in inventory.held:
                w(self.style.ERROR(
                    f"held {s.scope_id}/{s.schedule_id}: suspended ({s.suspension_reason}); "
                    "a re-issue would lift that suspension: repair it as its reason says "
                    "(docs/schedules.md), which binds the rules in force"))
        elif inventory.affected:
            w("dry run: nothing changed; re-run with --apply to re-issue them")
        else:
            w(self.style.SUCCESS("no cron schedule is affected"))
