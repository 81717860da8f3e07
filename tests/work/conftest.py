"""Fixtures of the Work runtime tests: test-local definitions, a worker pass with a fixed lease
owner and no heartbeat thread, and owner-side reads of the store (the owner is a superuser in
development, so these reads see every scope)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, connections

from durable_schedule import work
from durable_schedule.work import registry

MIN = timedelta(minutes=1)
OWNER = "test-worker"


@pytest.fixture
def define() -> Callable[..., work.WorkDefinition]:
    """``define(name, version="v1", **kwargs)``: a definition forgotten after the test."""
    made: list[work.WorkDefinition] = []

    def _define(name: str, version: str = "v1", **kwargs) -> work.WorkDefinition:
        kwargs.setdefault("safety", work.ProviderSafety.IDEMPOTENT)
        definition = registry.define(name, version, **kwargs)
        made.append(definition)
        return definition

    yield _define
    for definition in made:
        registry._unregister(definition.name, definition.version)


def run_pass(**kwargs) -> work.WorkPassCounts:
    """One worker pass as the test worker, without the renewal thread."""
    kwargs.setdefault("lease_owner", OWNER)
    kwargs.setdefault("heartbeat", False)
    return work.process_work_pass(**kwargs)


#: A bound against a hang in :func:`pass_in_thread` (a pass returns in well under a second).
HANG_BOUND_SECONDS = 60


def pass_in_thread(**kwargs):
    """Run one pass on a thread; (finished, what it returned or raised). For the passes an
    interrupt must stop: a hang shows as ``finished`` false instead of a stuck test."""
    box: list = []

    def target() -> None:
        try:
            box.append(run_pass(**kwargs))
        except BaseException as exc:  # noqa: BLE001 -- the test inspects it
            box.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_BOUND_SECONDS)
    return not thread.is_alive(), (box[0] if box else None)


def rows(sql: str, params=()) -> list[tuple]:
    """Read the store as the owner."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def one(sql: str, params=()):
    found = rows(sql, params)
    assert len(found) == 1, found
    return found[0]


def work_row(work_id, *columns: str) -> tuple:
    return one(f"select {', '.join(columns)} from durable_work where work_id = %s", (work_id,))


def permits(work_id) -> list[tuple]:
    """(permit_no, attempt, outcome, resolution_source) in permit order."""
    return rows("select permit_no, attempt, outcome, resolution_source from durable_work_permit"
                " where work_id = %s order by permit_no", (work_id,))


def history(work_id) -> list[str]:
    return [r[0] for r in rows("select event from durable_work_history where work_id = %s"
                               " order by id", (work_id,))]


def dispatch(work_id) -> tuple | None:
    """(due_at, lease_owner) of the Work's dispatch row, or None when it has none."""
    found = rows("select d.due_at, d.lease_owner from durable_work_dispatch d"
                 " join durable_work w on w.id = d.work_ref where w.work_id = %s", (work_id,))
    return found[0] if found else None


def count(table: str) -> int:
    return one(f"select count(*) from {table}")[0]


class StatementLog:
    """A ``connection.execute_wrapper`` that records the SQL of every statement sent."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        self.sql.append(str(sql))
        return execute(sql, params, many, context)


class Crash(BaseException):
    """Raised by a test executor to stop the worker as a crash would: not an ``Exception``, so
    the runtime records no outcome; the permit committed before the call stays unresolved."""
