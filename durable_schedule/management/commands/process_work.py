"""``manage.py process_work``: one bounded pass of the Work runtime (docs/getting-started.md, issue
3 item 7).

Claims at most ``--max-items`` due Work dispatch rows, at most ``--batch`` per claim statement
(each claim sized from recent invocation times and ``--wait-budget``), under a
claim lease of ``--lease-seconds``; runs executors with the deadline-bounded cancellation signal
and a watchdog thread that renews each attempt's lease at its policy's renewal cadence. Before
the pass it imports the ``work`` module of every installed app, so definitions in
``<app>/work.py`` are registered. Up to ``--batch`` rows are claimed and admitted per transaction
and their outcomes group-committed; ``--concurrency N`` runs N executors at once (docs/work.md
"Batched Work" and "Concurrency"). Prints the pass's counts (``-v 0`` prints nothing); exits 0, or
non-zero with the diagnostic code when the pass fails; Ctrl-C ends it with one line on stderr and
exit status 130 (docs/operations.md "Stopping"). ``--loop`` runs passes until SIGTERM or
SIGINT (durable_schedule.runner: NOTIFY wake-up, transient-error retry, graceful stop, exit 0).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from durable_schedule import work
from durable_schedule.errors import DurableError
from durable_schedule.observability.logs import print_stop_summary
from durable_schedule.runner import committed
from durable_schedule.runner.cli import (
    InterruptibleCommand,
    add_runner_arguments,
    positive_int,
    seconds,
    whole_number,
)
from durable_schedule.runner.pooler import check_prepared_statements
from durable_schedule.work import passes as work_passes
from durable_schedule.work.passes import validate_concurrency, validate_pass_arguments
from durable_schedule.work.queues import validate_queues
from durable_schedule.work.runtime import WorkPassCounts
from durable_schedule.work.sizing import (
    DEFAULT_MAX_BATCH,
    WAIT_BUDGET_SECONDS,
    validate_wait_budget,
)


class Command(InterruptibleCommand, BaseCommand):
    help = "Execute due Work: one bounded pass (claim, admit, invoke, record the outcome)."
    interrupted_leaves = ("an attempt in progress records no outcome and is recovered after its "
                          "lease; admitted attempts not started were handed back and "
                          "unprocessed claims released")

    def add_arguments(self, parser: CommandParser) -> None:
        add_runner_arguments(parser, lease_help=(
            "claim lease, 1-600 s (default DURABLE_SCHEDULE['LEASE_SECONDS']);"
            " an admitted attempt holds its policy's lease"))
        parser.add_argument("--max-items", type=positive_int, default=100,
                            help="claimed Work rows per pass at most (default 100); without "
                                 "--loop a bound on the whole run, transient retries included")
        parser.add_argument("--batch", type=positive_int, default=DEFAULT_MAX_BATCH,
                            help="the largest claim: rows claimed and admitted per transaction, "
                                 "their outcomes group-committed; each claim is sized from "
                                 "recent invocation times within it (default "
                                 f"{DEFAULT_MAX_BATCH})")
        parser.add_argument("--wait-budget", type=seconds, default=WAIT_BUDGET_SECONDS,
                            metavar="SECONDS",
                            help="how long an admitted attempt may wait for the ones claimed "
                                 "before it, by the measured invocation times; sizes each "
                                 f"claim (> 0 and <= 60 s, default {WAIT_BUDGET_SECONDS:g})")
        parser.add_argument("--no-heartbeat", action="store_true",
                            help="do not renew leases in a background thread while executors run")
        parser.add_argument("--concurrency", type=whole_number, default=1,
                            help="executors running at once: threads (each with its own "
                                 "connection) and async executors on one event loop; 1-256 "
                                 "(default 1; docs/operations.md sizes it)")
        parser.add_argument("--queue", action="append", dest="queues", default=None,
                            metavar="NAME",
                            help="serve only this Work queue (repeatable; default: every "
                                 "queue). Within one priority, queues are served in the order "
                                 "given (docs/work.md \"Queues and priorities\")")

    def handle(self, *args, **options) -> None:
        self.bounded_run = not options["loop"]  # Ctrl-C: one line and exit 130 (runner/cli.py)
        try:
            # every argument before the database is touched: a refused run changes nothing
            validate_pass_arguments(options["max_items"], options["batch"],
                                    options["lease_owner"], options["lease_seconds"])
            concurrency = validate_concurrency(options["concurrency"])
            wait_budget = validate_wait_budget(options["wait_budget"])
            queues = None if options["queues"] is None else validate_queues(options["queues"])
        except DurableError as exc:
            raise CommandError(f"process_work: {exc}") from exc
        work.autodiscover()

        pass_options = {
            "max_items": options["max_items"],
            "batch": options["batch"],
            "lease_owner": options["lease_owner"],
            "lease_seconds": options["lease_seconds"],
            "heartbeat": not options["no_heartbeat"],
            "concurrency": concurrency,
            "queues": queues,
            "wait_budget": wait_budget,
        }

        def one_pass(stop=None):
            return work.process_work_pass(stop=stop, **pass_options)

        try:
            check_prepared_statements()  # a pooler that drops them: one clear DS415 up front
            if options["loop"]:
                from durable_schedule.runner.service import serve

                stats = serve("work", lambda stop: one_pass(stop).as_dict(),
                              lease_owner=options["lease_owner"], queues=queues)
                print_stop_summary(self.stdout, "work", stats, options["verbosity"])
                return
            # The same bounded transient retry as process_schedules (docs/protocol/runner.md): a cut
            # connection or a serialization failure rolls the phase back and tries again, for
            # what is left of --max-items (a bound on the whole run, retries included).
            counts = work_passes.process_work_once(**pass_options)
        except (DurableError, DatabaseError) as exc:
            # What committed before the error is a fact: printed as on success.
            ended = committed.loop_stats_of(exc)
            if ended is not None:
                print_stop_summary(self.stdout, "work", ended, options["verbosity"],
                                   failed=True)
            elif committed.of(exc) and options["verbosity"] >= 1:
                self.stdout.write(str(WorkPassCounts(**committed.of(exc))))
            raise CommandError(f"process_work failed: {exc}") from exc
        if options["verbosity"] >= 1:
            self.stdout.write(str(counts))
