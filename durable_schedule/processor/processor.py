"""``process_due()``: one bounded pass over due schedules (docs/protocol/schedules.md "Manual
processing API"; docs/protocol/schedules.md rule S8). This is the River-style ``run_once``; the
``--loop`` runner wraps it.

The pass alternates two transaction forms and never mixes them: a dispatcher claim (its own
committed transaction as ``durable_dispatcher``, up to ``min(remaining, claim_batch)`` rows
per statement, at most 1000), then scoped runtime transactions for the claimed schedules: the
claims of one scope in batches of ``SCHEDULE_BATCH``, one transaction per batch with
multi-row statements (``batch.py``), or one transaction per schedule (``step.py``) when the
batch size is 1, when a batch rolls back (every schedule of it then runs alone) and for a
schedule the batch could not evaluate (quarantined alone). A failure of one schedule never
undoes another's committed fact and does not keep the others the pass holds from their
progress; its error is raised at the end of the pass (with the schedule's identity and phase,
see ``step.process_claim``).

Cancellation (a ``threading.Event``, a callable returning bool, or None) is observed before
every claim statement, i.e. before taking any new lease. Schedules already leased by this pass
are still processed: that is bounded by the claim size and keeps their leases from idling.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import DataError, IntegrityError

from durable_schedule import conf
from durable_schedule.errors import DurableError, InvalidArgument
from durable_schedule.observability.metrics import instrumented_pass
from durable_schedule.processor.batch import process_batch
from durable_schedule.processor.dispatcher import MAX_ROWS, Claim, claim, validate_lease
from durable_schedule.processor.step import (
    ScheduleOutcome,
    hold_claim,
    is_held,
    is_quarantinable,
    process_claim,
    quarantine_claim,
    release_claims,
)
from durable_schedule.runner import committed
from durable_schedule.runner.retry import run_with_retry
from durable_schedule.store import identifiers

log = logging.getLogger("durable_schedule.processor")

COUNT_FIELDS = ("claimed", "materialized", "coalesced", "recovered", "skipped", "superseded",
                "suspended", "noop", "held")


@dataclass
class PassCounts:
    """The counts of one pass; all zero for an empty pass.

    ``claimed``: dispatch rows leased. ``materialized``: occurrences bridged to Work (nominal,
    recovery, or a pending coalesced occurrence whose slot became free). ``coalesced``: passes
    whose new instants joined the pending coalesced occurrence. ``recovered``: recovery
    occurrences run (``run_once``). ``skipped``: missed ranges recorded as skipped (``skip``).
    ``superseded``: claims an API change or a lease takeover made stale (nothing written).
    ``suspended``: schedules suspended (fence mismatch or clock jump). ``noop``: schedules with
    nothing to do. ``held``: schedules whose target queue ``DURABLE_SCHEDULE['QUEUES']`` does
    not list (DS244): nothing materialized, looked at again after the lease duration
    (docs/operations.md "Held schedules"). A ``buffer_all`` instant that was buffered is in
    none of these (only in ``claimed``; its history row says ``buffered``): it is counted as
    ``materialized`` when it runs. ``outcomes`` lists each schedule's outcome (not compared,
    not counted).
    """

    claimed: int = 0
    materialized: int = 0
    coalesced: int = 0
    recovered: int = 0
    skipped: int = 0
    superseded: int = 0
    suspended: int = 0
    noop: int = 0
    held: int = 0
    outcomes: list[ScheduleOutcome] = field(default_factory=list, compare=False, repr=False)

    def record(self, outcome: ScheduleOutcome) -> None:
        self.outcomes.append(outcome)
        if outcome.work_id is not None:
            self.materialized += 1
        action = outcome.action
        if action == "superseded":
            self.superseded += 1
        elif action == "suspend":
            self.suspended += 1
        elif action == "skipped":
            self.skipped += 1
        elif action == "coalesce":
            self.coalesced += 1
        elif action == "recovery":
            self.recovered += 1
        elif action == "noop" and outcome.work_id is None:
            self.noop += 1
        elif action == "held":
            self.held += 1

    def as_dict(self) -> dict[str, int]:
        """The counts only (for logs, the runner and ``process_schedules``). Read field by
        field: ``dataclasses.asdict`` would deep-copy every outcome of the pass first (about
        0.1 ms per schedule, measured: docs/benchmarks.md "Batched schedule passes")."""
        return {name: getattr(self, name) for name in COUNT_FIELDS}

    def __iadd__(self, other: PassCounts) -> PassCounts:
        for name in COUNT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.outcomes.extend(other.outcomes)
        return self


def default_lease_owner() -> str:
    """``host:pid``, trimmed to what the claim function accepts."""
    raw = f"{socket.gethostname()}:{os.getpid()}"
    clean = identifiers.strip_forbidden(raw).strip()
    return (clean or f"pid:{os.getpid()}")[:200]


def _cancelled(cancel: Any) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if hasattr(cancel, "is_set"):
        return cancel.is_set
    if callable(cancel):
        return lambda: bool(cancel())
    raise InvalidArgument("cancel must be a threading.Event, a callable or None", field="cancel")


def _process_claim_with_retry(one, owner: str, using: str | None) -> ScheduleOutcome:
    """The scoped transaction of one claim, retried under the claim it still holds.

    A transient failure (lock or statement timeout, a cut connection, a serialization failure)
    rolled the transaction back, but the claim committed before it and still leases the row:
    re-running the whole pass would claim nothing and report an idle pass (issue 11 item 6).
    So the same claim is retried here with the pinned backoff (docs/operations.md "Faults"),
    and when the retries are exhausted RetriesExhausted (DS405) names the schedule and phase.
    """
    return run_with_retry(
        "schedule.step", lambda: process_claim(one, owner, using=using),
        identity={"schedule_id": one.schedule_id, "routing_id": one.routing_id})


def validate_pass_arguments(max_schedules: object, claim_batch: object, batch_size: object,
                            lease_owner: object, lease_duration: object,
                            ) -> tuple[int, int, str, timedelta]:
    """The pass's ``(schedules per batch, rows per claim, lease owner, lease duration)`` with
    the defaults filled in, or the DS-coded refusal of a bad argument. ``process_schedules``
    calls it before it touches the database, so a refused run changes nothing."""
    if type(max_schedules) is not int or max_schedules < 1:
        raise InvalidArgument("max_schedules must be a positive integer",
                              field="max_schedules", got=repr(max_schedules)[:80])
    if claim_batch is not None and (type(claim_batch) is not int
                                    or not 1 <= claim_batch <= MAX_ROWS):
        raise InvalidArgument(f"claim_batch must be an integer between 1 and {MAX_ROWS}",
                              field="claim_batch", got=repr(claim_batch)[:80])
    if batch_size is not None and (type(batch_size) is not int
                                   or not 1 <= batch_size <= MAX_ROWS):
        raise InvalidArgument(f"batch_size must be an integer between 1 and {MAX_ROWS}",
                              field="batch_size", got=repr(batch_size)[:80])
    per_batch = conf.schedule_batch() if batch_size is None else batch_size
    batch = MAX_ROWS if claim_batch is None else claim_batch
    owner = default_lease_owner() if lease_owner is None else lease_owner
    duration = timedelta(seconds=conf.lease_seconds()) if lease_duration is None \
        else lease_duration
    owner, duration = validate_lease(owner, duration)
    return per_batch, batch, owner, duration


@instrumented_pass("schedule")  # metrics + span (docs/operations.md "Metrics")
def process_due(
    max_schedules: int = 1,
    lease_owner: str | None = None,
    lease_duration: timedelta | None = None,
    cancel: Any = None,
    *,
    claim_batch: int | None = None,
    batch_size: int | None = None,
    using: str | None = None,
) -> PassCounts:
    """Process at most ``max_schedules`` due schedules and return the pass's counts.

    ``lease_owner`` defaults to ``host:pid``; ``lease_duration`` to
    ``DURABLE_SCHEDULE['LEASE_SECONDS']``. Each claim statement takes
    ``min(remaining, claim_batch or 1000)`` rows; a smaller ``claim_batch`` shares a large due
    set between concurrent processes sooner and holds fewer leases at a time. The claimed
    schedules of one scope are processed ``batch_size`` at a time in one transaction (default
    ``DURABLE_SCHEDULE['SCHEDULE_BATCH']``; 1: one transaction per schedule). Must not run
    inside a caller's atomic block (each transaction commits on its own). Never waits for Work
    and never performs provider I/O.

    A schedule that fails with an error of its own (a conflict, a row the store refuses) does
    not stop the others this pass already holds: they are processed, then the first such error
    is raised (no new claim is taken after it). A database error that a retry may cure (a lost
    connection, a deadlock) is raised at once; the runner retries the pass. A held schedule
    (its target queue is not listed, DS244) is no such error: it is counted as ``held``.
    """
    counts = PassCounts()
    try:
        _run_pass(counts, max_schedules, lease_owner, lease_duration, cancel,
                  claim_batch=claim_batch, batch_size=batch_size, using=using)
    except BaseException as exc:
        committed.note(exc, counts.as_dict(), counts)  # committed facts, for the loop
        raise
    return counts


def process_due_once(max_schedules: int = 1, **options: Any) -> PassCounts:
    """``process_due`` under the runner's bounded transient retry (``process_schedules``
    without ``--loop``), with ``max_schedules`` a bound on the whole run: an attempt that
    failed after claiming some schedules leaves the retry only what is left (the schedules it
    claimed were processed, or are held by their leases until these expire, like any claimed
    row). The counts are those of every attempt together, outcomes included."""
    validate_pass_arguments(max_schedules, options.get("claim_batch"),
                            options.get("batch_size"), options.get("lease_owner"),
                            options.get("lease_duration"))
    spent = PassCounts()

    @instrumented_pass("schedule")
    def attempt() -> PassCounts:
        nonlocal spent
        tally = PassCounts()
        try:
            left = max_schedules - spent.claimed
            if left > 0:
                _run_pass(tally, left, **options)
        except BaseException as exc:
            committed.note(exc, tally.as_dict(), tally)  # this attempt's, for the metrics
            raise
        finally:
            # Counted even when the attempt raised: what it claimed is spent.
            spent += tally
        return tally

    try:
        run_with_retry("schedule.pass", attempt)
    except BaseException as exc:
        # The failed attempt noted its own counts; the run's are those of every attempt.
        if isinstance(exc, DurableError):
            exc.context["pass_counts"] = spent.as_dict()
        committed.note(exc, spent.as_dict())
        raise
    return spent


def _run_pass(counts: PassCounts, max_schedules: int, lease_owner: str | None = None,
              lease_duration: timedelta | None = None, cancel: Any = None, *,
              claim_batch: int | None = None, batch_size: int | None = None,
              using: str | None = None) -> None:
    """The pass itself, counting into ``counts`` as it goes, so that an attempt that raises
    still tells what it claimed and what its committed schedules did."""
    per_batch, batch, owner, duration = validate_pass_arguments(
        max_schedules, claim_batch, batch_size, lease_owner, lease_duration)
    cancelled = _cancelled(cancel)
    run = _Pass(owner, per_batch, using, counts, duration)
    remaining = max_schedules
    while remaining > 0 and not cancelled():
        wanted = min(remaining, batch, MAX_ROWS)
        claims = claim(owner, duration, wanted, using=using)
        counts.claimed += len(claims)
        remaining -= len(claims)
        run.process(claims)
        if run.failure is not None or len(claims) < wanted:
            break  # nothing else is due now (or other passes hold it), or a schedule failed
    if run.failure is not None:
        if isinstance(run.failure, DurableError):
            run.failure.context.setdefault("pass_counts", counts.as_dict())
        raise run.failure


#: Errors that belong to one schedule: the others of the pass still make their progress.
_OWN_ERRORS = (DurableError, IntegrityError, DataError)


class _Pass:
    """The claims of one pass, processed batch by batch (or alone), outcomes in claim order."""

    def __init__(self, owner: str, per_batch: int, using: str | None,
                 counts: PassCounts, lease_duration: timedelta) -> None:
        self.owner, self.per_batch, self.using = owner, per_batch, using
        self.counts, self.lease_duration = counts, lease_duration
        self.failure: BaseException | None = None

    def process(self, claims: list[Claim]) -> None:
        done: dict[Claim, ScheduleOutcome] = {}
        try:
            self._process(claims, done)
        except (KeyboardInterrupt, SystemExit):
            # Ctrl-C in a bounded pass: the decision in progress rolled back whole. The
            # claims whose decision did not commit are given back, so another pass takes them
            # at once instead of after their leases (docs/operations.md "Stopping"). Tried
            # once; what cannot be released lapses with its lease.
            try:
                release_claims([one for one in claims if one not in done], self.owner,
                               using=self.using)
            except Exception:  # noqa: BLE001 -- the interrupt is the one to report
                pass
            raise
        finally:
            # Recorded even when a transient error ends the pass mid-way: these outcomes
            # committed, and a retry of the pass must not count them again or lose them.
            for one in claims:
                if one in done:
                    self._record(done[one])

    def _process(self, claims: list[Claim], done: dict[Claim, ScheduleOutcome]) -> None:
        for group in _groups(claims, self.per_batch):
            if self.per_batch == 1:
                self._alone(group[0], done)
                continue
            try:
                # A transient failure is retried for the same claims, which still lease their
                # rows (issue 11 item 6); run_with_retry raises DS405 once its retries are spent.
                result = run_with_retry(
                    "schedule.batch", partial(process_batch, group, self.owner, using=self.using),
                    identity={"routing_id": group[0].routing_id, "batch": len(group)})
            except Exception as exc:
                if is_connection_loss(exc):
                    # The database is unreachable (after the batch's retries): every schedule
                    # alone would fail the same way, each after its own retries. The pass ends
                    # here (docs/operations.md "Failover and database outages").
                    raise
                # The batch rolled back whole (after its retries, for a transient error): every
                # schedule of it is processed alone, with its own retries, so the one that
                # failed fails alone -- named, with its phase -- and the others make progress.
                log.warning("batch of %d schedules rolled back (%s: %s); processing them one by "
                            "one", len(group), type(exc).__name__,
                            (str(exc).splitlines() or [""])[0][:200],
                            extra={"routing_id": group[0].routing_id, "batch": len(group)})
                for one in group:
                    self._alone(one, done)
                continue
            done.update(result.outcomes)
            for one in result.deferred:
                self._alone(one, done)

    def _alone(self, one: Claim, done: dict[Claim, ScheduleOutcome]) -> None:
        try:
            try:
                outcome = _process_claim_with_retry(one, self.owner, self.using)
            except DurableError as exc:
                if is_held(exc):
                    # Its queue is not listed (DS244): a configuration state, not the pass's
                    # failure; looked at again after the lease duration (docs/operations.md).
                    outcome = hold_claim(one, self.owner, exc, self.lease_duration,
                                         using=self.using)
                elif not is_quarantinable(exc):
                    raise
                else:
                    # A row this code cannot evaluate is quarantined; the pass goes on
                    # (docs/protocol/runner.md).
                    outcome = quarantine_claim(one, self.owner, exc, using=self.using)
        except _OWN_ERRORS as exc:
            if is_transient(exc) or is_connection_loss(exc):
                raise  # not this schedule's own error: a lost database ends the pass
            if self.failure is None:
                self.failure = exc
            log.warning("schedule %s (routing id %s) failed, the pass goes on: %s",
                        one.schedule_id, one.routing_id, exc,
                        extra={"schedule_id": one.schedule_id, "routing_id": one.routing_id})
            return
        done[one] = outcome

    def _record(self, outcome: ScheduleOutcome) -> None:
        self.counts.record(outcome)
        if not log.isEnabledFor(logging.DEBUG):
            return  # the record's extra fields cost more than the count (per schedule)
        log.debug("schedule %s/%s: %s", outcome.scope_id, outcome.schedule_id,
                  outcome.action, extra={
                      "scope_id": outcome.scope_id, "schedule_id": outcome.schedule_id,
                      "action": outcome.action, "reason": outcome.reason,
                      "work_id": str(outcome.work_id) if outcome.work_id else None})


def _groups(claims: list[Claim], size: int) -> list[list[Claim]]:
    """The claims by routing id (first appearance order), in chunks of at most ``size``."""
    by_scope: dict[int, list[Claim]] = {}
    for one in claims:
        by_scope.setdefault(one.routing_id, []).append(one)
    return [group[i:i + size] for group in by_scope.values()
            for i in range(0, len(group), size)]


def is_transient(exc: BaseException) -> bool:
    """The runner's classification (runner/retry.py): a retry of the pass may cure it."""
    from durable_schedule.runner.retry import is_transient as classify

    return classify(exc)


def is_connection_loss(exc: BaseException) -> bool:
    """The database is unreachable, also behind RetriesExhausted (runner/outage.py)."""
    from durable_schedule.runner.outage import is_connection_loss as classify

    return classify(exc)
