"""The health report behind ``manage.py durable_status`` (issue 5, docs/getting-started.md).

Cross-scope facts come from payload-free tables the owner may read (the dispatch queues); facts
about a scope's schedules and Work are read inside that scope's own runtime transaction, one scope
at a time, reached through the routing ids of the dispatch queues. So the report needs no
privilege that row-level security would have to make an exception for, and works the same when
the owner is a superuser (development) or not (production).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from durable_schedule.store import inspection
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection, routed
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION


def _q(name: str) -> str:
    return query("operations_queries.sql", name)


@dataclass
class QueueHealth:
    due: int = 0
    oldest_lateness_seconds: float | None = None
    expired_leases: int = 0


@dataclass
class SuspendedSchedule:
    scope_id: str
    schedule_id: str
    reason: str
    suspended_at: datetime | None
    revision: int


@dataclass
class StatusReport:
    migrated: bool
    schema_version: int | None = None
    compatibility_floor: int | None = None
    code_schema_version: int = SCHEMA_VERSION
    required_schema: int = REQUIRED_SCHEMA
    runtime_epoch: int | None = None
    role_problems: list[str] = field(default_factory=list)
    scopes: int = 0
    schedules: QueueHealth = field(default_factory=QueueHealth)
    work: QueueHealth = field(default_factory=QueueHealth)
    suspended_schedules: list[SuspendedSchedule] = field(default_factory=list)
    work_by_state: dict[str, int] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    missing_partitions: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """Everything an operator must act on; empty means healthy."""
        out: list[str] = []
        if not self.migrated:
            return ["DS402: the store is not migrated (run manage.py migrate)"]
        if (self.schema_version or 0) < self.required_schema:
            out.append(f"DS401: schema {self.schema_version} is below the required "
                       f"{self.required_schema}")
        if (self.compatibility_floor or 0) > self.code_schema_version:
            out.append(f"DS401: the store demands code of schema >= {self.compatibility_floor}")
        out.extend(f"DS304: {p}" for p in self.role_problems)
        out.extend(f"missing history partition {p} (run manage.py durable_partitions)"
                   for p in self.missing_partitions)
        for s in self.suspended_schedules:
            out.append(f"schedule {s.scope_id}/{s.schedule_id} suspended: {s.reason}")
        if self.work_by_state.get("suspended"):
            out.append(f"{self.work_by_state['suspended']} Work suspended (needs proof)")
        for name, queue in (("schedule", self.schedules), ("work", self.work)):
            if queue.expired_leases:
                out.append(f"{queue.expired_leases} expired {name} leases (is a runner down?)")
        return out

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["healthy"] = self.healthy
        data["problems"] = self.problems
        for s in data["suspended_schedules"]:
            at = s["suspended_at"]
            s["suspended_at"] = at.isoformat() if at else None
        return data


def collect(*, using: str | None = None) -> StatusReport:
    """Read the whole report; each scope's facts in its own scoped transaction."""
    conn = connection(using)
    with conn.cursor() as cur:
        schema = inspection.schema_report(cur)
        report = StatusReport(
            migrated=schema.migrated,
            schema_version=schema.schema_version,
            compatibility_floor=schema.compatibility_floor,
            runtime_epoch=schema.runtime_epoch,
            role_problems=schema.role_problems,
        )
        if not schema.migrated:
            return report
        cur.execute(_q("schedule_backlog"))
        report.schedules = QueueHealth(*_backlog(cur.fetchone()))
        cur.execute(_q("work_backlog"))
        report.work = QueueHealth(*_backlog(cur.fetchone()))
        cur.execute(_q("partitions"))
        report.partitions = [r[0] for r in cur.fetchall()]
        cur.execute(_q("expected_partitions"))
        report.missing_partitions = [r[0] for r in cur.fetchall()
                                     if r[0] not in report.partitions]
        cur.execute(_q("routing_ids"))
        routing_ids = [r[0] for r in cur.fetchall()]
    if schema.role_problems:
        return report  # scoped reads need the runtime role to be sound
    for routing_id in routing_ids:
        with routed(routing_id, using=using) as (cur, scope_id):
            if scope_id is None:
                continue
            report.scopes += 1
            cur.execute(_q("suspended_schedules"))
            report.suspended_schedules.extend(
                SuspendedSchedule(scope_id, *row) for row in cur.fetchall()
            )
            cur.execute(_q("work_states"))
            for state, count in cur.fetchall():
                report.work_by_state[state] = report.work_by_state.get(state, 0) + count
    return report


def _backlog(row) -> tuple[int, float | None, int]:
    due, lateness, expired = row
    late = float(lateness) if lateness is not None and float(lateness) > 0 else None
    return int(due or 0), late, int(expired or 0)
