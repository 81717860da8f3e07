"""In-process passes of the test process, used to set a scene up and to settle the store after
the crashed subprocesses are gone (no barrier is armed in the test process itself).

``settle`` is the recovery loop: schedule passes and Work passes at the database clock until
nothing is claimable, then the clock jumps to the next instant anything is due (a Work retry
slot, a lease expiry, a schedule's next instant; never further, so no schedule becomes late by
more than its safety window), until every Work is terminal. A Work suspended because its
reconciler could not answer (``reconciliation_unknown``) gets the operator's proof, read from
the ground truth of the demo provider (``demo_effect``), exactly as docs/work.md tells an
operator to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from demo.models import Effect

from durable_schedule import work
from durable_schedule.processor import process_due
from tests.crash.invariants import rows

OWNER = "crash-recovery"
LEASE = timedelta(seconds=5)
US = timedelta(microseconds=1)


def schedule_passes(owner: str = OWNER, limit: int = 100) -> int:
    """Schedule passes until one claims nothing; returns the schedules claimed."""
    claimed = 0
    for _ in range(limit):
        counts = process_due(10_000, lease_owner=owner, lease_duration=LEASE)
        claimed += counts.claimed
        if counts.claimed == 0:
            return claimed
    raise AssertionError(f"schedule passes still claim rows after {limit} passes")


def work_passes(owner: str = OWNER + "-worker", limit: int = 100) -> int:
    """Work passes until one claims nothing; returns the rows claimed.

    Only called when no other worker is alive (the crashed ones are dead, their leases
    expired), so a row reported busy (a live lease of someone else) is a bug, not a wait.
    """
    work.autodiscover()
    claimed = 0
    for _ in range(limit):
        counts = work.process_work_pass(max_items=2_000, batch=100, lease_owner=owner,
                                        lease_seconds=LEASE.total_seconds(), heartbeat=False)
        claimed += counts.claimed
        assert counts.busy == 0, f"Work reported busy although no other worker lives: {counts}"
        if counts.claimed == 0:
            return claimed
    raise AssertionError(f"Work passes still claim rows after {limit} passes")


def prove_unknown_by_ground_truth(actor: str = "ops@crash-suite") -> int:
    """Record the operator's proof for Work suspended with ``reconciliation_unknown``."""
    proved = 0
    for scope, work_id in rows("select scope_id, work_id from durable_work"
                               " where state = 'suspended'"
                               " and suspension_reason = 'reconciliation_unknown'"):
        effect = Effect.objects.filter(work_id=work_id).order_by("id").first()
        if effect is None:
            work.record_proof(scope, work_id, "not_applied", actor=actor)
        else:
            order = int(effect.key.split(":", 1)[1]) if effect.key.startswith("invoice:") else None
            work.record_proof(scope, work_id, "applied", actor=actor,
                              result={"invoice": order, "attempt": effect.attempt})
        proved += 1
    return proved


@dataclass
class Settled:
    rounds: int = 0
    clock_jumps: int = 0
    schedules_claimed: int = 0
    work_claimed: int = 0
    proofs: int = 0
    jumps: list = field(default_factory=list, repr=False)


def next_due():
    """The earliest instant a Work or schedule dispatch row becomes claimable, if any Work is
    still waiting (None when every Work is terminal or suspended without an open question)."""
    work_due = rows("select min(due_at) from durable_work_dispatch")[0][0]
    if work_due is None:
        return None
    schedule_due = rows("select min(due_at) from durable_schedule_dispatch")[0][0]
    return work_due if schedule_due is None else min(work_due, schedule_due)


def settle(clock, *, max_rounds: int = 500) -> Settled:
    """Run recovery until every Work is terminal; returns what it took."""
    out = Settled()
    for _ in range(max_rounds):
        out.rounds += 1
        s = schedule_passes()
        w = work_passes()
        p = prove_unknown_by_ground_truth()
        out.schedules_claimed += s
        out.work_claimed += w
        out.proofs += p
        if s or w or p:
            continue
        when = next_due()
        if when is None:
            return out
        target = max(when, clock.now + US)
        out.clock_jumps += 1
        out.jumps.append(target - clock.now)
        clock.set(target)
    raise AssertionError(f"the store did not settle in {max_rounds} rounds")
