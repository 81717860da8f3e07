"""Operator recovery (issue 5 item 6, docs/protocol/schedules.md "Clock and evaluator fences").

After a database restore, or when a whole runtime generation must be fenced off, the operator
bumps the store's runtime epoch: every schedule then suspends (``runtime_epoch_mismatch``) the
next time it is processed, before moving its cursor or accepting Work. Once the operator has
checked the restored state, ``release_all`` rebinds each such schedule to the current epoch
through the public ``schedules.release_after_recovery`` (never moving a cursor); other
suspension reasons are left alone, they need an ``update()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from durable_schedule.errors import DurableError, InvalidArgument
from durable_schedule.operations.status import collect
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection

RELEASABLE_REASON = "runtime_epoch_mismatch"


@dataclass(frozen=True)
class EpochBump:
    before: int
    after: int
    dry_run: bool


@dataclass(frozen=True)
class ReleaseOutcome:
    scope_id: str
    schedule_id: str
    released: bool
    detail: str


def bump_runtime_epoch(*, dry_run: bool, using: str | None = None) -> EpochBump:
    """Increment the store epoch as the owner. The row lock waits for scoped transactions that
    hold the fence FOR SHARE, so no decision straddles the bump."""
    conn = connection(using)
    with conn.cursor() as cur:
        cur.execute(query("operations_queries.sql", "current_epoch"))
        before = cur.fetchone()[0]
        if dry_run:
            return EpochBump(before, before + 1, True)
        cur.execute(query("operations_queries.sql", "bump_epoch"))
        return EpochBump(before, cur.fetchone()[0], False)


def release_all(*, actor: str, dry_run: bool, using: str | None = None) -> list[ReleaseOutcome]:
    """Release every schedule suspended for a runtime-epoch mismatch, one call per schedule.

    The releases go through ``schedules.release_after_recovery``, which runs on the store's
    alias only: a ``using`` naming another alias is refused (DS406) before anything is read,
    since the list would come from one database and the releases go to another."""
    from durable_schedule import conf, schedules

    if using not in (None, "") and connection(using).alias != conf.database_alias():
        raise InvalidArgument("release_all releases on the store's alias "
                              "(DURABLE_SCHEDULE['DATABASE']) only; nothing was read or written",
                              got=repr(using)[:80], store=conf.database_alias())
    outcomes: list[ReleaseOutcome] = []
    for s in collect(using=using).suspended_schedules:
        if s.reason != RELEASABLE_REASON:
            outcomes.append(ReleaseOutcome(s.scope_id, s.schedule_id, False,
                                           f"left suspended: {s.reason} needs update()"))
            continue
        if dry_run:
            outcomes.append(ReleaseOutcome(s.scope_id, s.schedule_id, False, "would release"))
            continue
        try:
            schedules.release_after_recovery(s.scope_id, s.schedule_id, actor=actor,
                                             expected_revision=s.revision)
            outcomes.append(ReleaseOutcome(s.scope_id, s.schedule_id, True, "released"))
        except DurableError as exc:
            outcomes.append(ReleaseOutcome(s.scope_id, s.schedule_id, False, f"{exc.code}: "
                                           f"{exc.message}"))
    return outcomes
