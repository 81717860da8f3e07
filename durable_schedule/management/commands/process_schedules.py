"""``manage.py process_schedules``: bounded passes of the schedule processor
(docs/getting-started.md).

By default one pass over at most ``--max-schedules`` due schedules, for cron, a systemd timer or
a Kubernetes CronJob. ``--passes N`` runs up to N passes and stops early after a pass that
claimed nothing. Prints each pass's counts (``-v 2`` lists every schedule's decision; ``-v 0``
prints nothing); exits 0, or non-zero with the diagnostic code when a pass fails. A held
schedule (its target queue is not listed, DS244) does not fail the pass: it is counted as
``held`` and named on stderr, and the run exits 0 (docs/operations.md "Held schedules"). A transient
database error is retried (rollback, 3 retries, 250 ms -> 500 ms -> 1 s) before a pass fails;
``--max-schedules`` bounds a pass with its retries together, and its printed counts are those
of every attempt. Ctrl-C ends a run with one line on stderr and exit status 130, and so does
Ctrl-C before the run began (the system checks) (docs/operations.md "Stopping").
``--loop`` runs passes until SIGTERM/SIGINT (durable_schedule.runner: NOTIFY wake-up, quarantine
of unevaluable rows, transient-error retry, daily partition maintenance, graceful stop, exit 0).
"""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from durable_schedule import conf
from durable_schedule.errors import DurableError, InvalidArgument
from durable_schedule.management.interrupts import InterruptedBeforeStart
from durable_schedule.observability.logs import print_stop_summary
from durable_schedule.processor import PassCounts, process_due, process_due_once
from durable_schedule.processor.processor import (
    COUNT_FIELDS,
    default_lease_owner,
    validate_pass_arguments,
)
from durable_schedule.runner import committed
from durable_schedule.runner.cli import InterruptibleCommand, add_runner_arguments, positive_int
from durable_schedule.runner.pooler import check_prepared_statements


class Command(InterruptedBeforeStart, InterruptibleCommand, BaseCommand):
    help = "Process due schedules: bounded passes that turn due occurrences into accepted Work."
    interrupted_leaves = ("the transaction in progress rolled back; the claims of schedules "
                          "whose decision did not commit released (or left to their leases)")

    def add_arguments(self, parser: CommandParser) -> None:
        add_runner_arguments(parser, lease_help=(
            "lease per claimed schedule, 1-600 s (default DURABLE_SCHEDULE['LEASE_SECONDS'])"))
        parser.add_argument("--max-schedules", type=positive_int, default=100,
                            help="schedules per pass at most (default 100)")
        parser.add_argument("--claim-batch", type=positive_int, default=None,
                            help="rows per claim statement, 1-1000 (default: as many as the "
                                 "pass may still process)")
        parser.add_argument("--passes", type=positive_int, default=None,
                            help="passes to run at most; stops after a pass that claimed "
                                 "nothing (default 1; not with --loop)")

    def handle(self, *args, **options) -> None:
        self.bounded_run = not options["loop"]  # Ctrl-C: one line and exit 130 (runner/cli.py)
        verbosity = options["verbosity"]
        owner = default_lease_owner() if options["lease_owner"] is None else options["lease_owner"]
        # None is "not given"; 0 given through call_command is refused below, not defaulted
        seconds = conf.lease_seconds() if options["lease_seconds"] is None \
            else options["lease_seconds"]
        # beyond timedelta's range, or not a number at all (call_command hands a value over
        # unparsed: "30", True), the value goes to the lease check as it is, which refuses it
        # with its diagnostic code instead of an OverflowError or a TypeError
        duration = timedelta(seconds=seconds) if _seconds_number(seconds) else seconds

        pass_options = {"lease_owner": owner, "lease_duration": duration,
                        "claim_batch": options["claim_batch"]}

        def one_pass(cancel=None) -> PassCounts:
            return process_due(options["max_schedules"], cancel=cancel, **pass_options)

        try:
            # every argument before the database is touched: a refused run changes nothing
            options["passes"] = _passes(options["passes"], options["loop"])
            validate_pass_arguments(options["max_schedules"], options["claim_batch"], None,
                                    owner, duration)
            check_prepared_statements()  # a pooler that drops them: one clear DS415 up front
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        # Ctrl-C before this (the system checks, the argument and pooler checks): one line,
        # exit 130 (management/interrupts.py); from here a bounded run has its own handling
        # and --loop its graceful stop.
        self.began = True
        if options["loop"]:
            self._loop(one_pass, verbosity, owner)
            return
        total = PassCounts()
        for number in range(1, options["passes"] + 1):
            try:
                # --max-schedules bounds the pass across its transient retries, and the counts
                # are those of every attempt (process_due_once)
                counts = process_due_once(options["max_schedules"], **pass_options)
            except (DurableError, DatabaseError) as exc:
                done = committed.of(exc)  # what committed before the error, printed all the same
                if done and verbosity >= 1:
                    failed = PassCounts(**{k: v for k, v in done.items() if k in COUNT_FIELDS})
                    self.stdout.write(f"pass {number} (failed): {_line(failed)}")
                    if options["passes"] > 1:
                        total += failed
                        self.stdout.write(f"total: {_line(total)}")
                raise CommandError(f"pass {number} failed: {_chain(exc)}") from exc
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
        if total.held and verbosity >= 1:
            # Exit 0: a held schedule is a configuration state, not a failed pass (the loop
            # treats it alike); durable_status reports it as a problem (docs/operations.md).
            held = sorted({f"{o.scope_id}/{o.schedule_id}" for o in total.outcomes
                           if o.action == "held"})
            self.stderr.write(
                f"{total.held} held: {', '.join(held)} target a queue "
                "DURABLE_SCHEDULE['QUEUES'] does not list (DS244); nothing materialized for "
                "them until the queue is listed again or the schedule is updated")


    def _loop(self, one_pass, verbosity: int, owner: str) -> None:
        from durable_schedule.runner.service import serve

        def run_once(stop) -> dict[str, int]:
            counts = one_pass(cancel=stop)
            if verbosity >= 2:
                for outcome in counts.outcomes:
                    self.stdout.write("  " + _outcome(outcome))
            return counts.as_dict()

        try:
            stats = serve("schedule", run_once, lease_owner=owner)
        except (DurableError, DatabaseError) as exc:
            ended = committed.loop_stats_of(exc)
            if ended is not None:  # what committed before the error is still summed up
                print_stop_summary(self.stdout, "schedule", ended, verbosity, failed=True)
            raise CommandError(f"schedule runner stopped: {_chain(exc)}") from exc
        print_stop_summary(self.stdout, "schedule", stats, verbosity)


def _seconds_number(value) -> bool:
    """A number of seconds ``timedelta`` holds (an int or float, not a bool or text)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and abs(value) <= 10**9)


def _passes(value, loop: bool) -> int:
    """--passes: a whole number >= 1 (call_command hands it over unparsed), 1 when not given;
    refused with --loop, which runs passes until it is stopped, instead of being ignored."""
    if value is None:
        return 1
    if loop:
        raise InvalidArgument("--passes bounds a run without --loop; --loop runs passes until "
                              "SIGTERM/SIGINT: give one of them", passes=value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("passes must be a whole number >= 1", passes=repr(value)[:40])
    return value


def _chain(exc: BaseException) -> str:
    """The error and its causes, with the notes that name the schedule and phase."""
    parts = []
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 5:
        text = f"{type(cur).__name__}: {str(cur).strip()}"
        notes = getattr(cur, "__notes__", ())
        parts.append(text + (f" [{'; '.join(notes)}]" if notes else ""))
        cur = cur.__cause__
        seen += 1
    return " <- ".join(parts)


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
