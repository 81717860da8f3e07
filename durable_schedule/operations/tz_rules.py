"""The tz-rules inventory behind ``manage.py durable_tz_rules`` and ``durable_status``
(docs/schedules.md "Time-zone rules fingerprint", docs/operations.md).

For every live cron schedule (one scope at a time, in that scope's runtime transaction) it
compares the rules snapshot the active generation persisted with the rules this process loads
over the same window. A schedule whose fingerprint differs is *affected*: the processor has
suspended it (``tz_rules_changed``) or will on its next pass. Re-issuing is the public repair,
``schedules.update()`` with nothing changed: a new generation bound to the current rules.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from durable_schedule.errors import DurableError
from durable_schedule.evaluation.cron import fence
from durable_schedule.evaluation.timeline import spec_from_json
from durable_schedule.operations import probe
from durable_schedule.operations.scopes import routing_ids
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import routed


@dataclass
class CronSchedule:
    scope_id: str
    schedule_id: str
    state: str
    revision: int
    generation: int
    tz: str | None
    persisted_fingerprint: str | None
    current_fingerprint: str | None = None
    suspension_reason: str | None = None
    first_moved_instant: dict[str, Any] | None = None
    error: str | None = None

    @property
    def affected(self) -> bool:
        return self.error is None and self.current_fingerprint != self.persisted_fingerprint

    @property
    def held(self) -> bool:
        """Affected, but suspended for another reason than the tz fence (an operator's stop, a
        clock jump, ...): a re-issue is an ``update()``, which would clear that suspension too,
        so ``--apply`` leaves it to that reason's own repair, an update that binds the rules in
        force then (docs/schedules.md "Time-zone rules fingerprint")."""
        return (self.affected and self.state == "suspended"
                and self.suspension_reason != fence.REASON)


@dataclass
class Inventory:
    schedules: list[CronSchedule] = field(default_factory=list)

    @property
    def affected(self) -> list[CronSchedule]:
        return [s for s in self.schedules if s.affected]

    @property
    def held(self) -> list[CronSchedule]:
        return [s for s in self.schedules if s.held]

    def rules_in_use(self) -> list[dict[str, Any]]:
        """One row per (zone, current fingerprint): how many schedules, how many mismatched."""
        out: dict[tuple, dict[str, Any]] = {}
        for s in self.schedules:
            if s.error is not None:
                continue
            row = out.setdefault((s.tz, s.current_fingerprint), {
                "tz": s.tz, "fingerprint": s.current_fingerprint, "schedules": 0,
                "mismatched": 0})
            row["schedules"] += 1
            row["mismatched"] += int(s.affected)
        return sorted(out.values(), key=lambda r: (r["tz"], r["fingerprint"]))

    def to_json(self) -> dict[str, Any]:
        return {"rules_in_use": self.rules_in_use(),
                "affected": [asdict(s) for s in self.affected],
                "held": [asdict(s) for s in self.held],
                "unreadable": [asdict(s) for s in self.schedules if s.error is not None]}


def _read(cur, scope_id: str, row) -> CronSchedule:
    schedule_id, state, revision, cursor, reason, generation, spec_text, version = row
    item = CronSchedule(scope_id, schedule_id, state, revision, generation, None, None,
                        suspension_reason=reason)
    try:
        spec = spec_from_json("cron", json.loads(spec_text), version)
    except DurableError as exc:  # a tampered row: the processor quarantines it
        item.error = f"{exc.code}: {exc.message}"
        return item
    item.tz, item.persisted_fingerprint = spec.tz, spec.tz_rules.fingerprint
    evidence = fence.drift(spec, cursor)
    if evidence is None:
        item.current_fingerprint = item.persisted_fingerprint
    else:
        item.current_fingerprint = evidence["current_fingerprint"]
        item.first_moved_instant = evidence["first_moved_instant"]
    return item


def collect(*, using: str | None = None, routing: list[int] | None = None,
            timeout: float | None = None) -> Inventory:
    """Every live cron schedule with its persisted and current fingerprints. ``routing``: the
    routing ids already read (``durable_status``); ``timeout``: the probe bound of each
    statement (operations/probe.py; None: the connection's own settings)."""
    inventory = Inventory()
    if routing is None:
        with probe.bounded_transaction(using=using, seconds=timeout) as cur:
            routing = routing_ids(cur)  # every scope (operations/scopes.py)
    for routing_id in routing:
        with routed(routing_id, using=using) as (cur, scope_id):
            if scope_id is None:
                continue
            probe.bound(cur, timeout)
            cur.execute(query("cron_queries.sql", "active_cron_generations"))
            inventory.schedules.extend(_read(cur, scope_id, row) for row in cur.fetchall())
    return inventory


def reissue(item: CronSchedule, *, actor: str) -> Any:
    """Re-issue one affected schedule as a new generation bound to the current rules."""
    from durable_schedule import schedules

    return schedules.update(item.scope_id, item.schedule_id, expected_revision=item.revision,
                            actor=actor)
