"""``manage.py process_schedules``: bounded passes of the schedule processor (DESIGN §1).

By default one pass over at most ``--max-schedules`` due schedules, for cron, a systemd timer or
a Kubernetes CronJob. ``--passes N`` runs up to N passes and stops early after a pass that
claimed nothing. Prints each pass's counts (``-v 2`` lists every schedule's decision; ``-v 0``
prints nothing); exits 0, or non-zero with the diagnostic code when a pass fails.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser

from durable_schedule import conf
from durable_schedule.errors import DurableError
from durable_schedule.processor import PassCounts, process_due
from durable_schedule.processor.processor import default_lease_owner


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Process due schedules: bounded passes that turn due occurrences into accepted Work."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--max-schedules", type=_positive, default=100,
                            help="schedules per pass at most (default 100)")
        parser.add_argument("--lease-owner", default=None,
                            help="lease owner name (default host:pid)")
        parser.add_argument("--lease-seconds", type=_positive, default=None,
                            help="lease per claimed schedule, 1-600 s "
                                 "(default DURABLE_SCHEDULE['LEASE_SECONDS'])")
        parser.add_argument("--claim-batch", type=_positive, default=None,
                            help="rows per claim statement, 1-1000 (default: as many as the "
                                 "pass may still process)")
        parser.add_argument("--passes", type=_positive, default=1,
                            help="passes to run at most; stops after a pass that claimed "
                                 "nothing (default 1)")

    def handle(self, *args, **options) -> None:
        verbosity = options["verbosity"]
        owner = options["lease_owner"] or default_lease_owner()
        seconds = options["lease_seconds"] or conf.lease_seconds()
        total = PassCounts()
        for number in range(1, options["passes"] + 1):
            try:
                counts = process_due(options["max_schedules"], lease_owner=owner,
                                     lease_duration=timedelta(seconds=seconds),
                                     claim_batch=options["claim_batch"])
            except DurableError as exc:
                raise CommandError(f"pass {number} failed: {exc}") from exc
            total += counts
            if verbosity >= 1:
                self.stdout.write(f"pass {number}: {_line(counts)}")
            if verbosity >= 2:
                for outcome in counts.outcomes:
                    self.stdout.write("  " + _outcome(outcome))
            if counts.claimed == 0:
                break
        if verbosity >= 1 and options["passes"] > 1:
            self.stdout.write(f"total: {_line(total)}")


def _line(counts: PassCounts) -> str:
    return " ".join(f"{name}={value}" for name, value in counts.as_dict().items())


def _outcome(outcome) -> str:
    text = f"{outcome.scope_id}/{outcome.schedule_id}: {outcome.action}"
    if outcome.work_id is not None:
        text += f" -> work {outcome.work_id} ({outcome.materialized_kind})"
    if outcome.reason:
        text += f" reason={outcome.reason}"
    if outcome.completed:
        text += " completed"
    return text
