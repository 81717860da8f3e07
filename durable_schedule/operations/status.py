"""The health report behind ``manage.py durable_status`` (issue 5, docs/operations.md
"Health").

Cross-scope facts come from payload-free tables the owner may read (the dispatch queues, the
runner heartbeats: :mod:`durable_schedule.operations.gauges`); facts about a scope's schedules
and Work are read inside that scope's own runtime transaction, one scope at a time, reached
through the routing registry (:mod:`durable_schedule.operations.scopes`: a scope whose Work all
finished has no dispatch row, but its suspended Work still counts). So the report
needs no privilege that row-level security would have to make an exception for, and works the
same when the owner is a superuser (development) or not (production).

A live schedule whose target names a queue that ``DURABLE_SCHEDULE['QUEUES']`` no longer lists
is a problem too: each of its occurrences is refused with DS244 until the queue is listed again
or the schedule is updated (docs/work.md "Queues and priorities").

Thresholds (settings, docs/operations.md): a queue whose oldest due row is later than
``LATENESS_ALERT_SECONDS`` or that has more than ``BACKLOG_ALERT`` rows due is a problem, and so
is due work older than ``RUNNER_DEAD_SECONDS`` while no runner of that kind is alive. A dead
runner alone is a warning: its leases expire and the live runners take its rows over.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from durable_schedule import conf
from durable_schedule.operations import probe
from durable_schedule.operations.gauges import QueueHealth, RunnerInfo, queue_health, runners
from durable_schedule.operations.scopes import routing_ids
from durable_schedule.processor import lifecycle as lifecycle_hooks
from durable_schedule.store import inspection
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import routed
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION

__all__ = ["QueueHealth", "RunnerInfo", "StatusReport", "SuspendedSchedule", "UnlistedQueue",
           "collect", "unreachable"]


def _q(name: str) -> str:
    return query("operations_queries.sql", name)


@dataclass
class SuspendedSchedule:
    scope_id: str
    schedule_id: str
    reason: str
    suspended_at: datetime | None
    revision: int
    #: The definition row's primary key (admin links); not part of the schedule's identity.
    definition_pk: int | None = None
    #: The suspension evidence's diagnostic code and short reason when it has them (a
    #: quarantine: ``DS114``/``invalid_spec``, ``DS160``/``tz_unavailable``, ...).
    code: str | None = None
    cause: str | None = None

    def describe(self) -> str:
        """The reason, with the evidence's code and short reason when there are any."""
        extra = " ".join(x for x in (self.code, self.cause) if x)
        return f"{self.reason} ({extra})" if extra else self.reason


@dataclass
class UnlistedQueue:
    """A live schedule whose target's queue ``DURABLE_SCHEDULE['QUEUES']`` does not list."""

    scope_id: str
    schedule_id: str
    queue: str


@dataclass
class NamedBacklog:
    """Due pending Work of one Work name across the scopes (the admin's per-queue table)."""

    due: int = 0
    oldest_lateness_seconds: float | None = None


@dataclass
class StatusReport:
    migrated: bool
    reachable: bool = True
    unreachable_reason: str | None = None
    #: The DATABASES alias the report reads (the store's, or collect()'s ``using``).
    database: str | None = None
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
    #: Schedules held by DS244: their queue was dropped from DURABLE_SCHEDULE['QUEUES'].
    unlisted_queue_schedules: list[UnlistedQueue] = field(default_factory=list)
    work_by_state: dict[str, int] = field(default_factory=dict)
    #: Suspended Work by suspension reason: a proof fixes some, not all (SUSPENDED_WORK_FIX).
    suspended_work: dict[str, int] = field(default_factory=dict)
    #: Schedules an operator paused (not a problem: a decision), and the instants skipped per
    #: cause over every schedule (docs/schedules.md "Missed instants").
    paused_schedules: int = 0
    missed_instants: dict[str, int] = field(default_factory=dict)
    #: Instants buffer_all schedules keep waiting behind a held slot (docs/schedules.md
    #: "Overlap policies"); each runs when the Work before it ends.
    buffered_instants: int = 0
    work_backlog_by_name: dict[str, NamedBacklog] = field(default_factory=dict)
    finished_last_hour: dict[str, int] = field(default_factory=dict)
    runners: list[RunnerInfo] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    missing_partitions: list[str] = field(default_factory=list)
    # Cron: the tz rules in use (zone, current fingerprint, schedules, mismatched) and the
    # schedules whose persisted rules differ (operations/tz_rules.py).
    tz_rules: list[dict[str, Any]] = field(default_factory=list)
    tz_rules_mismatches: list[str] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=lambda: {
        "lateness_alert_seconds": conf.lateness_alert_seconds(),
        "backlog_alert": conf.backlog_alert(),
        "runner_dead_seconds": conf.runner_dead_seconds(),
    })

    @property
    def store_broken(self) -> bool:
        """Exit status 2: the store cannot be used at all (unreachable, not migrated, below
        the floor, roles or grants wrong)."""
        return (not self.reachable or not self.migrated or bool(self.role_problems)
                or (self.schema_version or 0) < self.required_schema
                or (self.compatibility_floor or 0) > self.code_schema_version)

    @property
    def problems(self) -> list[str]:
        """Everything an operator must act on; empty means healthy."""
        if not self.reachable:
            return [f"DS426: the store cannot be reached: {self.unreachable_reason}"]
        if not self.migrated:
            return [f"DS402: the store is not migrated (run {_migrate(self.database)})"]
        out: list[str] = []
        if (self.schema_version or 0) < self.required_schema:
            out.append(f"DS401: schema {self.schema_version} is below the required "
                       f"{self.required_schema} (run {_migrate(self.database)})")
        if (self.compatibility_floor or 0) > self.code_schema_version:
            out.append(f"DS401: the store demands code of schema >= {self.compatibility_floor}")
        out.extend(f"DS304: {p}" for p in self.role_problems)
        out.extend(f"missing history partition {p} (run manage.py durable_partitions)"
                   for p in self.missing_partitions)
        for s in self.suspended_schedules:
            out.append(f"schedule {s.scope_id}/{s.schedule_id} suspended: {s.describe()}")
        out.extend(f"schedule {u.scope_id}/{u.schedule_id} targets queue {u.queue!r}, which "
                   "DURABLE_SCHEDULE['QUEUES'] does not list (DS244): its occurrences wait "
                   "until the queue is listed again or the schedule is updated"
                   for u in self.unlisted_queue_schedules)
        out.extend(f"cron schedule {m} has changed tz rules (manage.py durable_tz_rules)"
                   for m in self.tz_rules_mismatches)
        out.extend(_suspended_work_problems(self.suspended_work))
        for name, queue in (("schedule", self.schedules), ("work", self.work)):
            out.extend(self._queue_problems(name, queue))
        return out

    def _queue_problems(self, name: str, queue: QueueHealth) -> list[str]:
        out = []
        if queue.expired_leases:
            out.append(f"{queue.expired_leases} expired {name} leases (is a runner down?)")
        late = queue.oldest_lateness_seconds or 0.0
        if queue.due and late > self.thresholds["lateness_alert_seconds"]:
            out.append(f"{name} queue: oldest due row is {late:.0f}s late (threshold "
                       f"{self.thresholds['lateness_alert_seconds']:.0f}s)")
        if queue.due > self.thresholds["backlog_alert"]:
            out.append(f"{name} queue: {queue.due} rows due (threshold "
                       f"{self.thresholds['backlog_alert']:.0f})")
        live = [r for r in self.runners if r.kind == name and r.state == "live"]
        if queue.due and late > self.thresholds["runner_dead_seconds"] and not live:
            out.append(f"no live {name} runner for due work: {queue.due} rows due, oldest "
                       f"{late:.0f}s late")
        return out

    @property
    def warnings(self) -> list[str]:
        """Worth knowing, not worth a non-zero exit: runners that died without stopping."""
        return [f"runner {r.kind} {r.lease_owner} (host {r.host}, pid {r.pid}) is dead: no "
                f"heartbeat for {r.silent_seconds:.0f}s" for r in self.runners
                if r.state == "dead"]

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["healthy"] = self.healthy
        data["problems"] = self.problems
        data["warnings"] = self.warnings
        for s in data["suspended_schedules"]:
            s["suspended_at"] = _iso(s["suspended_at"])
        for r in data["runners"]:
            for key in ("started_at", "beat_at", "last_pass_at", "stopped_at"):
                r[key] = _iso(r[key])
        return data


def _migrate(alias: str | None) -> str:
    """The command that migrates the report's database: ``migrate --database <alias>`` when it
    is another alias than "default" (a plain ``migrate`` would leave it as it is)."""
    from durable_schedule.checks import migrate_command

    return migrate_command(alias or conf.database_alias())


#: What fixes Work suspended for each reason (docs/work.md "Suspension reasons"): a proof only
#: for an unknown reconciliation verdict; a definition not deployed needs a deploy and resume.
SUSPENDED_WORK_FIX = {
    "unknown_definition": "deploy its definition, then resume it",
    "reconciler_missing": "deploy its reconciler and resume it, or record proof",
    "unevaluable_policy": "its stored policy cannot be read: investigate",
}


def _suspended_work_problems(by_reason: dict[str, int]) -> list[str]:
    """One problem for the Work whose effect awaits a proof (``reconciliation_unknown``, the
    wording of every suspended Work before), one per reason with another fix."""
    proof = sum(n for reason, n in by_reason.items() if reason not in SUSPENDED_WORK_FIX)
    out = [f"{proof} Work suspended (needs proof)"] if proof else []
    out.extend(f"{by_reason[reason]} Work suspended ({reason}: {fix})"
               for reason, fix in SUSPENDED_WORK_FIX.items() if by_reason.get(reason))
    return out


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def unreachable(exc: BaseException) -> StatusReport:
    """The report for a store that could not be reached (exit 2, still valid JSON)."""
    reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return StatusReport(migrated=False, reachable=False, unreachable_reason=reason,
                        database=_store_alias())


def _store_alias() -> str | None:
    """The store's alias, or None when the setting itself is wrong (E005 names it)."""
    try:
        return conf.database_alias()
    except conf.InvalidSettings:
        return None


def collect(*, using: str | None = None,
            timeout: float | None = probe.DEFAULT_TIMEOUT_SECONDS) -> StatusReport:
    """Read the whole report; each scope's facts in its own scoped transaction. Every
    statement waits at most ``timeout`` seconds for a lock or to run (operations/probe.py):
    a store that does not answer within it raises the DatabaseError of an unreadable store."""
    with probe.bounded_transaction(using=using, seconds=timeout) as cur:
        schema = inspection.schema_report(cur)
        report = StatusReport(
            migrated=schema.migrated,
            database=cur.db.alias,
            schema_version=schema.schema_version,
            compatibility_floor=schema.compatibility_floor,
            runtime_epoch=schema.runtime_epoch,
            role_problems=schema.role_problems,
        )
        if not schema.migrated or schema.below_floor:
            # A schema this code does not fit (DS401) may lack what the reads below name: say
            # DS401, not "cannot be reached" because a table of a later schema is missing.
            return report
        queues = queue_health(cur)
        report.schedules, report.work = queues["schedule"], queues["work"]
        if (schema.schema_version or 0) >= REQUIRED_SCHEMA:
            report.runners = runners(cur)
        cur.execute(_q("partitions"))
        report.partitions = [r[0] for r in cur.fetchall()]
        cur.execute(_q("expected_partitions"))
        report.missing_partitions = [r[0] for r in cur.fetchall()
                                     if r[0] not in report.partitions]
        routing = routing_ids(cur)  # every scope, not only queued ones (operations/scopes.py)
    if schema.role_problems or schema.below_floor:
        return report  # scoped reads need the runtime role and this schema to be sound
    for routing_id in routing:
        with routed(routing_id, using=using) as (cur, scope_id):
            if scope_id is None:
                continue
            report.scopes += 1
            probe.bound(cur, timeout)
            _read_scope(cur, scope_id, report)
    _tz_rules(report, using, routing, timeout)
    return report


def _tz_rules(report: StatusReport, using: str | None, routing: list[int],
              timeout: float | None) -> None:
    from durable_schedule.operations import tz_rules

    inventory = tz_rules.collect(using=using, routing=routing, timeout=timeout)
    report.tz_rules = inventory.rules_in_use()
    report.tz_rules_mismatches = [f"{s.scope_id}/{s.schedule_id}" for s in inventory.affected]


def _read_scope(cur, scope_id: str, report: StatusReport) -> None:
    cur.execute(_q("suspended_schedules"))
    report.suspended_schedules.extend(SuspendedSchedule(scope_id, *row) for row in cur.fetchall())
    allowed = conf.queues()
    if allowed is not None:
        cur.execute(_q("unlisted_queue_schedules"), {"allowed": sorted(allowed)})
        report.unlisted_queue_schedules.extend(
            UnlistedQueue(scope_id, *row) for row in cur.fetchall())
    paused, missed, buffered = lifecycle_hooks.run_lifecycle(cur, "status_lifecycle",
                                                             {}).fetchone()
    report.paused_schedules += paused
    report.buffered_instants += buffered
    for cause, count in json.loads(missed).items():
        report.missed_instants[cause] = report.missed_instants.get(cause, 0) + int(count)
    cur.execute(_q("work_states"))
    for state, reason, count in cur.fetchall():
        report.work_by_state[state] = report.work_by_state.get(state, 0) + count
        if state == "suspended":
            report.suspended_work[reason] = report.suspended_work.get(reason, 0) + count
    cur.execute(_q("work_finished_last_hour"))
    for state, count in cur.fetchall():
        report.finished_last_hour[state] = report.finished_last_hour.get(state, 0) + count
    cur.execute(_q("work_backlog_by_name"))
    for name, count, lateness in cur.fetchall():
        entry = report.work_backlog_by_name.setdefault(name, NamedBacklog())
        entry.due += count
        late = float(lateness) if lateness is not None and float(lateness) > 0 else None
        if late is not None and (entry.oldest_lateness_seconds or 0) < late:
            entry.oldest_lateness_seconds = late
