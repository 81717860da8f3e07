"""The trusted dispatcher claim: transaction form 1 of docs/protocol/schedules.md.

One outermost transaction as ``durable_dispatcher`` calls ``claim_schedule_dispatch`` and
commits before anything reads scoped data. The dispatcher learns only routing columns (scope
routing id, schedule id, dispatch revision): no payload, target, policy, due time or cursor.
The lease owner and duration are checked here first (DS404) so a bad call never reaches the
database; the function checks them again before it changes a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import DataError

from durable_schedule.errors import InvalidLease
from durable_schedule.frozen import maker
from durable_schedule.observability.metrics import timed_claim
from durable_schedule.schedules.records import statement
from durable_schedule.store import identifiers
from durable_schedule.store.transactions import dispatcher_transaction

#: The claim function's bounds (0002_security.sql).
MAX_LEASE = timedelta(minutes=10)
MAX_ROWS = 1000


@dataclass(frozen=True)
class Claim:
    """One claimed dispatch row: all the dispatcher may know about it."""

    routing_id: int
    schedule_id: str
    dispatch_revision: int


#: ``Claim(routing_id, schedule_id, dispatch_revision)`` (durable_schedule/frozen.py).
_claim = maker(Claim)


def validate_lease(lease_owner: object, lease_duration: object) -> tuple[str, timedelta]:
    """Owner: 1-200 characters under the identifier rule (store/identifiers.py); lease: a
    timedelta > 0 and <= 10 min (a timedelta has no calendar parts, so this is the applied
    lease the claim function checks again)."""
    if (not isinstance(lease_owner, str) or len(lease_owner) > 200
            or identifiers.problem(lease_owner) is not None):
        raise InvalidLease("lease owner must be 1-200 characters of non-blank text without "
                           "control, format or separator characters",
                           lease_owner=repr(lease_owner)[:80])
    if not isinstance(lease_duration, timedelta) or not timedelta(0) < lease_duration <= MAX_LEASE:
        raise InvalidLease("lease duration must be a timedelta > 0 and <= 10 minutes",
                           lease_duration=repr(lease_duration)[:80])
    return lease_owner, lease_duration


@timed_claim("schedule")  # claim latency metric (docs/operations.md "Metrics")
def claim(lease_owner: str, lease_duration: timedelta, max_rows: int, *,
          using: str | None = None) -> list[Claim]:
    """Claim up to ``max_rows`` due dispatch rows under one lease each, and commit."""
    lease_owner, lease_duration = validate_lease(lease_owner, lease_duration)
    if type(max_rows) is not int or not 1 <= max_rows <= MAX_ROWS:
        raise InvalidLease(f"max_rows must be between 1 and {MAX_ROWS}", max_rows=max_rows)
    try:
        # The claim goes with the role switch (one round trip: dispatcher_transaction).
        first = (statement("claim"), {"lease_owner": lease_owner,
                                      "lease_duration": lease_duration,
                                      "max_rows": max_rows})
        with dispatcher_transaction(using=using, first=first) as cur:
            rows = cur.fetchall()
    except DataError as exc:  # the function's own DS404 refusal (SQLSTATE 22023)
        raise InvalidLease(str(exc).splitlines()[0], lease_owner=lease_owner) from exc
    make = _claim
    return [make(int(r[0]), r[1], int(r[2])) for r in rows]
