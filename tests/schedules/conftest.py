"""Fixtures and helpers of the Schedule protocol tests (issue 4): real PostgreSQL, the
controlled clock seam, rows read back as the owner (who bypasses RLS in development)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from demo import schedule_targets
from django.db import connection

from durable_schedule import schedules
from durable_schedule.processor import process_due
from durable_schedule.processor.dispatcher import claim
from durable_schedule.processor.step import process_claim
from durable_schedule.store.transactions import scoped
from tests.conftest import T0

SCOPE = "tenant-a"
OWNER = "test-dispatcher"
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
TEN = 10 * MINUTE


def at(minutes: int):
    """The instant ``minutes`` after T0, the controlled clock's starting point."""
    return T0 + minutes * MINUTE

__all__ = ["HOUR", "MINUTE", "OWNER", "SCOPE", "SECOND", "T0", "TEN", "at"]


@pytest.fixture
def target():
    """A registered Work target (``definition.target(payload=...)``)."""
    return schedule_targets.report.target(payload={"report": "nightly"})


def rows(sql: str, params=()) -> list[tuple]:
    """Rows read as the migration owner through Django's connection (no RLS in development)."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def one(sql: str, params=()):
    found = rows(sql, params)
    assert len(found) == 1, found
    return found[0]


def definition(schedule_id: str, scope: str = SCOPE) -> dict:
    with connection.cursor() as cur:
        cur.execute("select * from durable_schedule_definition where scope_id = %s"
                    " and schedule_id = %s", (scope, schedule_id))
        names = [c.name for c in cur.description]
        found = cur.fetchall()
    assert len(found) == 1, found
    row = dict(zip(names, found[0], strict=True))
    if isinstance(row["suspension_evidence"], str):  # Django loads jsonb as text
        row["suspension_evidence"] = json.loads(row["suspension_evidence"])
    return row


def occurrences(schedule_id: str, scope: str = SCOPE) -> list[tuple]:
    """(generation, kind, first, last, state, work_id) in identity order."""
    return rows(
        "select generation, kind, first_nominal_utc, last_nominal_utc, state, work_id"
        " from durable_schedule_occurrence where scope_id = %s and schedule_id = %s"
        " order by first_nominal_utc, generation, kind", (scope, schedule_id))


def works(scope: str = SCOPE) -> list[tuple]:
    """(work_id, state, source_occurrence_id, command_id, idempotency_key) by insertion."""
    return rows("select work_id, state, source_occurrence_id, command_id, idempotency_key"
                " from durable_work where scope_id = %s order by id", (scope,))


def dispatch(schedule_id: str, scope: str = SCOPE) -> tuple:
    """(due_at, lease_owner, dispatch_revision) of the schedule's dispatch row."""
    return one("select d.due_at, d.lease_owner, d.dispatch_revision"
               " from durable_schedule_dispatch d join durable_schedule_scope s"
               " on s.routing_id = d.scope_routing_id"
               " where s.scope_id = %s and d.schedule_id = %s", (scope, schedule_id))


def history(schedule_id: str, scope: str = SCOPE) -> list[tuple]:
    """(event, actor, detail) in recording order."""
    found = rows("select event, actor, detail::text from durable_schedule_history"
                 " where scope_id = %s and schedule_id = %s order by id", (scope, schedule_id))
    return [(event, actor, json.loads(detail)) for event, actor, detail in found]


def set_work_state(work_id, state: str, scope: str = SCOPE) -> int:
    """Move a Work to ``state`` through SQL as the runtime role in its scope (the terminal
    trigger runs exactly as it does for the Work runtime)."""
    with scoped(scope) as cur:
        cur.execute("update durable_work set state = %s, updated_at = now()"
                    " where scope_id = %s and work_id = %s", (state, scope, work_id))
        return cur.rowcount


def run_pass(clock, at=None, **kwargs):
    """Set the clock (when given) and run one bounded pass as the test dispatcher."""
    if at is not None:
        clock.set(at)
    kwargs.setdefault("max_schedules", 100)
    kwargs.setdefault("lease_owner", OWNER)
    try:
        return process_due(**kwargs)
    finally:
        leave_transaction_forms()


def leave_transaction_forms() -> None:
    """Undo what the processor's durable transactions leave behind inside a TEST transaction.

    In production ``dispatcher_transaction`` and ``routed`` are outermost transactions, so their
    ``SET LOCAL ROLE`` and local scope end with their commit. Inside pytest-django's test
    transaction they are savepoints, whose release keeps both: reset them for the next step.
    """
    with connection.cursor() as cur:
        cur.execute("reset role")
        cur.execute("select set_config('durable_schedule.scope_id', '', true),"
                    " set_config('durable_schedule.routing_id', '', true)")


def take_claims(owner: str = OWNER, lease=timedelta(seconds=30), max_rows: int = 1):
    """The dispatcher's claim transaction on its own (a test holds the lease)."""
    try:
        return claim(owner, lease, max_rows)
    finally:
        leave_transaction_forms()


def process(held, owner: str = OWNER):
    """The scoped transaction for one held claim."""
    try:
        return process_claim(held, owner)
    finally:
        leave_transaction_forms()


def create(schedule_id: str, spec, target, scope: str = SCOPE, **kwargs):
    return schedules.create(scope, schedule_id, spec, target, **kwargs)
