"""``process_due()``: one bounded pass over due schedules (docs/protocol/schedules.md "Manual
processing API"; docs/protocol/schedules.md rule S8). This is the River-style ``run_once``; the
``--loop`` runner wraps it.

The pass alternates two transaction forms and never mixes them: a dispatcher claim (its own
committed transaction as ``durable_dispatcher``, up to ``min(remaining, claim_batch)`` rows
per statement, at most 1000), then one scoped runtime transaction per claimed schedule. Each
schedule's decision commits on its own, so a failure of one schedule never undoes another's
committed fact; the error propagates (with the schedule's identity and phase, see
``step.process_claim``) and the leases this pass still held expire after their duration, when
another pass takes the rows over.

Cancellation (a ``threading.Event``, a callable returning bool, or None) is observed before
every claim statement, i.e. before taking any new lease. Schedules already leased by this pass
are still processed: that is bounded by the claim size and keeps their leases from idling.
"""

from __future__ import annotations

import logging
import os
import socket
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from durable_schedule import conf
from durable_schedule.errors import DurableError, InvalidArgument
from durable_schedule.observability.metrics import instrumented_pass
from durable_schedule.processor.dispatcher import MAX_ROWS, claim, validate_lease
from durable_schedule.processor.step import (
    ScheduleOutcome,
    is_quarantinable,
    process_claim,
    quarantine_claim,
)

log = logging.getLogger("durable_schedule.processor")

COUNT_FIELDS = ("claimed", "materialized", "coalesced", "recovered", "skipped", "superseded",
                "suspended", "noop")


@dataclass
class PassCounts:
    """The counts of one pass; all zero for an empty pass.

    ``claimed``: dispatch rows leased. ``materialized``: occurrences bridged to Work (nominal,
    recovery, or a pending coalesced occurrence whose slot became free). ``coalesced``: passes
    whose new instants joined the pending coalesced occurrence. ``recovered``: recovery
    occurrences run (``run_once``). ``skipped``: missed ranges recorded as skipped (``skip``).
    ``superseded``: claims an API change or a lease takeover made stale (nothing written).
    ``suspended``: schedules suspended (fence mismatch or clock jump). ``noop``: schedules with
    nothing to do. ``outcomes`` lists each schedule's outcome (not compared, not counted).
    """

    claimed: int = 0
    materialized: int = 0
    coalesced: int = 0
    recovered: int = 0
    skipped: int = 0
    superseded: int = 0
    suspended: int = 0
    noop: int = 0
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

    def as_dict(self) -> dict[str, int]:
        """The counts only (for logs, the runner and ``process_schedules``)."""
        data = asdict(self)
        return {name: data[name] for name in COUNT_FIELDS}

    def __iadd__(self, other: PassCounts) -> PassCounts:
        for name in COUNT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.outcomes.extend(other.outcomes)
        return self


def default_lease_owner() -> str:
    """``host:pid``, trimmed to what the claim function accepts."""
    raw = f"{socket.gethostname()}:{os.getpid()}"
    clean = "".join(ch for ch in raw if unicodedata.category(ch) != "Cc").strip()
    return (clean or f"pid:{os.getpid()}")[:200]


def _cancelled(cancel: Any) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if hasattr(cancel, "is_set"):
        return cancel.is_set
    if callable(cancel):
        return lambda: bool(cancel())
    raise InvalidArgument("cancel must be a threading.Event, a callable or None", field="cancel")


@instrumented_pass("schedule")  # metrics + span (docs/operations.md "Metrics")
def process_due(
    max_schedules: int = 1,
    lease_owner: str | None = None,
    lease_duration: timedelta | None = None,
    cancel: Any = None,
    *,
    claim_batch: int | None = None,
    using: str | None = None,
) -> PassCounts:
    """Process at most ``max_schedules`` due schedules and return the pass's counts.

    ``lease_owner`` defaults to ``host:pid``; ``lease_duration`` to
    ``DURABLE_SCHEDULE['LEASE_SECONDS']``. Each claim statement takes
    ``min(remaining, claim_batch or 1000)`` rows; a smaller ``claim_batch`` shares a large due
    set between concurrent processes sooner and holds fewer leases at a time. Must not run
    inside a caller's atomic block (each transaction commits on its own). Never waits for Work
    and never performs provider I/O.
    """
    if type(max_schedules) is not int or max_schedules < 1:
        raise InvalidArgument("max_schedules must be a positive integer",
                              field="max_schedules", got=repr(max_schedules)[:80])
    if claim_batch is not None and (type(claim_batch) is not int
                                    or not 1 <= claim_batch <= MAX_ROWS):
        raise InvalidArgument(f"claim_batch must be an integer between 1 and {MAX_ROWS}",
                              field="claim_batch", got=repr(claim_batch)[:80])
    batch = MAX_ROWS if claim_batch is None else claim_batch
    owner = default_lease_owner() if lease_owner is None else lease_owner
    duration = timedelta(seconds=conf.lease_seconds()) if lease_duration is None \
        else lease_duration
    owner, duration = validate_lease(owner, duration)
    cancelled = _cancelled(cancel)
    counts = PassCounts()
    remaining = max_schedules
    while remaining > 0 and not cancelled():
        wanted = min(remaining, batch, MAX_ROWS)
        claims = claim(owner, duration, wanted, using=using)
        counts.claimed += len(claims)
        remaining -= len(claims)
        for one in claims:
            try:
                outcome = process_claim(one, owner, using=using)
            except DurableError as exc:
                if not is_quarantinable(exc):
                    exc.context.setdefault("pass_counts", counts.as_dict())
                    raise
                # A row this code cannot evaluate is quarantined; the pass goes on
                # (docs/protocol/runner.md).
                outcome = quarantine_claim(one, owner, exc, using=using)
            counts.record(outcome)
            log.debug("schedule %s/%s: %s", outcome.scope_id, outcome.schedule_id,
                      outcome.action, extra={
                          "scope_id": outcome.scope_id, "schedule_id": outcome.schedule_id,
                          "action": outcome.action, "reason": outcome.reason,
                          "work_id": str(outcome.work_id) if outcome.work_id else None})
        if len(claims) < wanted:
            break  # nothing else is due now (or other passes hold it)
    return counts
