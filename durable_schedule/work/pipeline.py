"""Batched Work: claim + admission of a batch in one transaction, outcomes group-committed
(issue 16 item 2; docs/work.md "Batched Work").

:func:`admit_batch` runs one outermost runtime transaction (``routed_batch``): the schema floor
check and ``claim_work_dispatch`` for up to ``n`` rows in one statement (which ends back at the
connection's own role), then per scope of the claimed rows one
``lock_claimed_many`` statement, the usual decision per row (:mod:`.decisions`, every rule in
one place) and one ``admit_many`` statement writing all plain admissions of the scope (the
rarer outcomes -- refusal, suspension, recovery -- keep their own guarded transition).
It commits before anything is invoked, so every permit is durable before its effect can start
-- exactly as in the per-item path, only once for the batch.

:func:`record_outcomes` is the group commit: one transaction, per scope one ``complete_many``
UNNEST statement for every success (pgqueuer's completion shape, lock included: each row
locked only while *its* lease -- owner and lease generation -- still holds it, the clock read
after the lock, completed when before its deadline). What it leaves and everything else
(failures, late results, not-invoked attempts) is locked again with ``lock_leased_many`` and
goes through the per-item :func:`~.outcome.apply_outcome` in the same transaction, and an
attempt whose lease is gone is fenced alone (``lost``, its result quarantined) without
touching the others. The caller commits the outcomes before its next claim: nothing it
acknowledges lives only in memory.

``reconcile_before_retry`` Work is not admitted in a batch: its claims are returned as
``deferred`` and go through the per-item path (admit, invoke, record), because a batch widens
the window in which a crash leaves a permit whose effect is unknown (docs/work.md).

A guarded statement that finds a row moved on after its lock (:class:`LeaseConflict`, only a
tampered store) rolls the whole batch transaction back; :func:`admit_batch` then reports it and
the caller falls back to the per-item path for those claims, so one bad row never costs the
others their progress.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from durable_schedule.errors import alias_of
from durable_schedule.observability.metrics import observe_claim
from durable_schedule.store.arrays import BinaryArray
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import routed_batch
from durable_schedule.work import clock
from durable_schedule.work.decisions import RECONCILE, Invoke, decide
from durable_schedule.work.outcome import AttemptOutcome, apply_outcome, record_lost
from durable_schedule.work.rows import (
    LeaseConflict,
    WorkRow,
    admit_many,
    lock_claimed_many,
    lock_leased_many,
)
from durable_schedule.work.runtime import Claim, Options, refuse_below_floor

_QUERIES = "work_queries.sql"


@dataclass
class Admission:
    """What one batch admission committed."""

    claims: list[Claim] = field(default_factory=list)
    #: Admitted attempts, each with the monotonic instant taken before its admission statement.
    admitted: list[tuple[Invoke, float]] = field(default_factory=list)
    #: Claims left to the per-item path (reconcile_before_retry Work, or a batch that conflicted).
    deferred: list[Claim] = field(default_factory=list)
    tally: Counter = field(default_factory=Counter)


def _by_scope(items, routing_of):
    groups: dict[int, list] = defaultdict(list)
    for item in items:
        groups[routing_of(item)].append(item)
    return groups.items()


def admit_batch(opts: Options, lease_seconds: float, n: int) -> Admission:
    """Claim up to ``n`` due rows and admit the idempotent ones, all in one transaction."""
    out = Admission()
    origin = clock.monotonic()  # before the first admission statement (docs/work.md)
    try:
        with routed_batch(using=opts.using) as (cur, enter):
            started = time.perf_counter()
            cur.execute(query(_QUERIES, "floor_and_claim"),
                        {"owner": opts.owner, "lease_seconds": lease_seconds, "max_rows": n,
                         "queues": opts.claim_queues, "own_role": enter.own_role})
            found = cur.fetchall()
            enter.returned()  # the statement ended back at the own role
            observe_claim("work", time.perf_counter() - started,
                          sum(1 for row in found if row[2] is not None))
            # raising rolls the claim back
            refuse_below_floor(*found[0][:2], using=alias_of(cur))
            out.claims = [Claim(*row[2:5]) for row in found if row[2] is not None]
            for routing_id, claims in _by_scope(out.claims, lambda c: c.routing_id):
                scope_id = enter(routing_id)
                rows = {} if scope_id is None else lock_claimed_many(
                    cur, [c.work_ref for c in claims])
                collected: list = []
                for claim in claims:
                    _admit_one(cur, claim, rows.get(claim.work_ref), opts, origin, out,
                               collected)
                admitted = admit_many(cur, [(row, expires) for _, row, _, expires in collected],
                                      opts.owner)
                out.admitted.extend(
                    (Invoke(rid, row, definition, row.last_permit_no), origin)
                    for (rid, _, definition, _), row in zip(collected, admitted, strict=True))
    except LeaseConflict:
        # Rolled back as a whole, claim included: hand every claim to the per-item path, which
        # claims again and isolates the conflicting row (counted "lost" there).
        out.tally = Counter({"batch_conflicts": 1})
        out.admitted, out.deferred, out.claims = [], [], []
        return out
    return out


def _admit_one(cur, claim: Claim, row: WorkRow | None, opts: Options, origin: float,
               out: Admission, collected: list) -> None:
    if row is None or (row.dispatch_revision, row.dispatch_owner) != (
            claim.revision, opts.owner):
        out.tally["skipped"] += 1  # the claim went stale: another worker holds the row now
        return
    if row.provider_safety == RECONCILE:
        out.deferred.append(claim)  # per-item admission keeps its uncertain window short
        return
    # Every rule is decisions.decide's; a plain admission is collected for admit_many.
    action = decide(cur, claim.routing_id, row, opts.owner, out.tally, collected)
    if isinstance(action, Invoke):
        out.admitted.append((action, origin))


def record_outcomes(results: list[tuple[Invoke, AttemptOutcome]], opts: Options) -> Counter:
    """Group-commit attempt outcomes in one transaction; each is fenced by its own lease."""
    tally: Counter = Counter()
    if not results:
        return tally
    with routed_batch(using=opts.using, claiming=False) as (cur, enter):
        for routing_id, group in _by_scope(results, lambda r: r[0].routing_id):
            scope_id = enter(routing_id)
            if scope_id is None:
                for action, outcome in group:
                    record_lost(cur, action, opts.owner, outcome, tally)
                continue
            done = _complete_many(cur, [(a, o) for a, o in group if o.kind == "succeeded"],
                                  opts.owner, tally)
            rest = [(a, o) for a, o in group if a.row.id not in done]
            if not rest:
                continue
            # A lease lost, a deadline reached, a failure, an attempt not invoked: locked again
            # under its lease and recorded item by item, in this transaction.
            rows = lock_leased_many(cur, [(a.row.id, a.row.lease_generation) for a, _ in rest],
                                    opts.owner)
            for action, outcome in rest:
                row = rows.get(action.row.id)
                if row is None:
                    record_lost(cur, action, opts.owner, outcome, tally)
                else:
                    apply_outcome(cur, row, action.permit_no, outcome, opts.owner, tally)
    return tally


def _complete_many(cur, successes: list[tuple[Invoke, AttemptOutcome]], owner: str,
                   tally: Counter) -> set[int]:
    """Complete, in one statement, the successes whose lease still holds and whose deadline has
    not passed (the statement locks, samples the clock and decides); the ids it completed."""
    if not successes:
        return set()
    cur.execute(query(_QUERIES, "complete_many"), {
        "ids": [action.row.id for action, _ in successes],
        "generations": [action.row.lease_generation for action, _ in successes],
        "permits": [action.permit_no for action, _ in successes],
        "results": BinaryArray(outcome.result_json for _, outcome in successes),
        "lease_owner": owner,
    })
    completed, resolved = cur.fetchone()
    if resolved != len(completed):
        # Each completed row was locked under its lease with an open permit: only a tampered
        # store can get here. Raising rolls every outcome of the batch back (none is
        # acknowledged) and the caller records them one by one.
        raise LeaseConflict(f"group commit moved {len(completed)} rows, resolved {resolved} "
                            "permits")
    tally["succeeded"] += len(completed)
    return set(completed)
