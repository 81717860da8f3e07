"""Cross-scope health facts that need no scope: the dispatch queues and the runner heartbeats.

Cheap on purpose (a few index reads whatever the number of tenants), so a Prometheus scrape can
read them often. Before them comes the role and grant check ``durable_status`` makes (catalog
reads only, about 150 small queries), so that ``store_up`` is 0 exactly where ``durable_status``
exits 2: drift in isolation must page, not only show up when someone runs the command.

Runs on the owner's connection: the dispatch tables' owner policy admits the owner, and the
heartbeat table is the owner's and not tenant data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DatabaseError

from durable_schedule import conf
from durable_schedule.errors import TimeZoneSupportOff
from durable_schedule.store.inspection import schema_report
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection


def _q(name: str) -> str:
    return query("operations_queries.sql", name)


@dataclass
class QueueHealth:
    due: int = 0
    oldest_lateness_seconds: float | None = None
    expired_leases: int = 0


@dataclass
class RunnerInfo:
    runner_id: str
    kind: str
    lease_owner: str
    host: str
    pid: int
    version: str
    started_at: datetime
    beat_at: datetime
    last_pass_at: datetime | None
    passes: int
    last_counts: dict[str, Any]
    stopped_at: datetime | None
    silent_seconds: float
    #: ``live`` (beat within RUNNER_DEAD_SECONDS), ``dead`` (silent longer, never stopped) or
    #: ``stopped`` (stopped cleanly within the last hour).
    state: str = "live"


@dataclass
class Gauges:
    up: bool
    schema_version: int | None = None
    queues: dict[str, QueueHealth] = field(default_factory=dict)
    runners: list[RunnerInfo] = field(default_factory=list)

    @property
    def runner_counts(self) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {
            (kind, state): 0 for kind in ("schedule", "work") for state in ("live", "dead")}
        for r in self.runners:
            if r.state != "stopped":
                counts[(r.kind, r.state)] = counts.get((r.kind, r.state), 0) + 1
        return counts


def queue_health(cur) -> dict[str, QueueHealth]:
    """Due backlog, oldest lateness and expired leases of both dispatch queues. Work queues are
    one ``work`` queue until Work carries a queue name."""
    out = {}
    for queue, name in (("schedule", "schedule_backlog"), ("work", "work_backlog")):
        cur.execute(_q(name))
        due, lateness, expired = cur.fetchone()
        late = float(lateness) if lateness is not None and float(lateness) > 0 else None
        out[queue] = QueueHealth(int(due or 0), late, int(expired or 0))
    return out


def runners(cur) -> list[RunnerInfo]:
    dead_after = conf.runner_dead_seconds()
    cur.execute(_q("runners"))
    out = []
    for row in cur.fetchall():
        info = RunnerInfo(str(row[0]), *row[1:10], _counts(row[10]), row[11], float(row[12]))
        if info.stopped_at is not None:
            info.state = "stopped"
        elif info.silent_seconds > dead_after:
            info.state = "dead"
        out.append(info)
    return out


def _counts(value) -> dict[str, Any]:
    if isinstance(value, str):
        import json

        return json.loads(value)
    return dict(value or {})


def read_gauges(*, using: str | None = None, timeout: float | None = None) -> Gauges:
    """The gauges; ``up=False`` exactly where ``durable_status`` exits 2 for the store: it
    cannot be reached, is not migrated, is at a schema this code cannot run against (below
    REQUIRED_SCHEMA, or a floor above SCHEMA_VERSION), or its roles and grants differ from the
    contract (DS304)."""
    from durable_schedule.operations import probe

    if timeout is None:
        timeout = probe.DEFAULT_TIMEOUT_SECONDS  # a scrape must answer (operations/probe.py)
    try:
        with probe.bounded_transaction(using=using, seconds=timeout) as cur:
            schema = schema_report(cur)
            if not schema.migrated:
                return Gauges(up=False)
            if schema.below_floor or schema.role_problems:
                # Runners refuse such a store (DS401), or it is not the isolation the contract
                # promises (DS304): it is down for the alert that pages on store_up, as it is
                # for durable_status (exit 2); the version gauge stays to help say why.
                return Gauges(up=False, schema_version=schema.schema_version)
            return Gauges(up=True, schema_version=schema.schema_version,
                          queues=queue_health(cur), runners=runners(cur))
    except TimeZoneSupportOff:
        return Gauges(up=False)  # USE_TZ off: nothing is read (DS450, check E450)
    except DatabaseError:
        conn = connection(using)
        if not conn.in_atomic_block:
            conn.close()  # a broken connection must not poison the next scrape
        return Gauges(up=False)
