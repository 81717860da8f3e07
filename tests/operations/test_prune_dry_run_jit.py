"""``durable_prune --dry-run`` counts with JIT compilation off (docs/operations.md
"Retention"): its one statement walks every Work of the margin, the planner's cost for that
passes the JIT thresholds, and compiling took longer than the walk (0.5-1.4 s against tens of
milliseconds for 50,000 already pruned Work in the margin). The setting is transaction-local
and put back after the counts, so a caller's own transaction keeps its value."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule.operations.retention import prune
from tests.conftest import T0
from tests.work.conftest import run_pass as work_pass

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


def jit() -> str:
    with connection.cursor() as cur:
        cur.execute("select current_setting('jit')")
        return cur.fetchone()[0]


def test_prune__the_dry_run_counts_with_jit_off_and_puts_it_back(define, clock):
    handler = define("jit.ok")
    handler.executor(lambda ctx, payload: {})
    clock.set(T0)
    handler.enqueue(scope="tenant-a", command="a", idempotency_key="k", payload={})
    assert work_pass(max_items=10).succeeded == 1
    clock.set(T0 + 40 * DAY)
    with connection.cursor() as cur:
        cur.execute("set local jit = on")  # the server default, whatever this one's is
    seen = []

    def spy(execute, sql, params, many, context):
        if "WITH victims AS MATERIALIZED" in sql and "DELETE" not in sql:
            context["cursor"].execute("select current_setting('jit')")
            seen.append(context["cursor"].fetchone()[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        preview = prune(30 * DAY, dry_run=True)
    assert preview.work == 1
    assert seen == ["off"]  # before, the preview ran with jit on
    assert jit() == "on"  # the caller's transaction keeps its setting
    assert prune(30 * DAY, dry_run=False).work == 1  # the real run is unchanged
    assert jit() == "on"
