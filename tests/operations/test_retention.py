"""Issue 12 item 6: durable_prune removes what retention allows, in bounded batches, keeps the
Work row compare-or-return needs (a retried enqueue returns the original), changes nothing on
--dry-run, and refuses bad input with DS427."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from durable_schedule import schedules
from durable_schedule.errors import InvalidRetention
from durable_schedule.observability.heartbeat import Heartbeat
from durable_schedule.operations.retention import parse_age, prune
from tests.conftest import T0
from tests.schedules.conftest import run_pass as schedule_pass
from tests.work.conftest import run_pass as work_pass

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


def count(table: str, where: str = "true") -> int:
    with connection.cursor() as cur:
        cur.execute(f"select count(*) from {table} where {where}")
        return cur.fetchone()[0]


def finished_work(define, n: int, scope="tenant-a", name="retention.ok"):
    ok = define(name)
    ok.executor(lambda ctx, payload: {"done": payload["n"]})
    accepted = [ok.enqueue(scope=scope, command=f"c-{i}", idempotency_key="k",
                           payload={"n": i}) for i in range(n)]
    counts = work_pass(max_items=100)
    assert counts.succeeded == n
    return ok, accepted


def test_parse_age__units_and_minimum():
    assert parse_age("30d") == 30 * DAY
    assert parse_age("2w") == 14 * DAY
    assert parse_age("90m") == timedelta(minutes=90)
    for bad in ("", "30", "30s", "-1d", "1.5d", "30 days", "59m"):
        with pytest.raises(InvalidRetention) as err:
            parse_age(bad)
        assert err.value.code == "DS427"


def test_prune__dry_run_counts_and_changes_nothing(clock, define):
    finished_work(define, 3)
    clock.set(clock.now + 31 * DAY)
    before = [count(t) for t in ("durable_work", "durable_work_permit", "durable_work_history")]
    result = prune(30 * DAY, dry_run=True)
    assert (result.work, result.permits, result.quarantine) == (3, 3, 0)
    assert result.work_history == before[2] > 0
    assert [count(t) for t in ("durable_work", "durable_work_permit",
                               "durable_work_history")] == before


def test_prune__terminal_work_keeps_its_row_and_a_retried_enqueue_returns_the_original(
        clock, define):
    ok, accepted = finished_work(define, 2)
    clock.set(clock.now + 31 * DAY)
    result = prune(30 * DAY, dry_run=False)
    assert (result.work, result.permits) == (2, 2)
    assert count("durable_work") == 2
    assert count("durable_work_permit") == count("durable_work_history") == 0
    again = ok.enqueue(scope="tenant-a", command="c-0", idempotency_key="k", payload={"n": 0})
    assert (again.work_id, again.created, again.state) == (accepted[0].work_id, False,
                                                           "succeeded")
    assert count("durable_work") == 2  # nothing new accepted, nothing run twice
    from durable_schedule import work

    info = work.get("tenant-a", accepted[1].work_id)
    assert info.state == "succeeded"


def test_prune__young_and_unfinished_work_is_left_alone(clock, define):
    finished_work(define, 1)
    pending = define("retention.later")
    pending.executor(lambda ctx, payload: {})
    pending.enqueue(scope="tenant-a", command="later", idempotency_key="k", payload={},
                    due_at=T0 + 40 * DAY)
    clock.set(clock.now + 10 * DAY)
    assert prune(30 * DAY, dry_run=False).work == 0  # finished 10 days ago only
    clock.set(T0 + 31 * DAY)
    result = prune(30 * DAY, dry_run=False)
    assert result.work == 1
    assert count("durable_work_history", "work_id in (select work_id from durable_work"
                 " where command_id = 'later')") == 1  # its 'accepted' row stays


def test_prune__bounded_batches_and_a_rerun_starts_after_the_mark(clock, define):
    finished_work(define, 5)
    clock.set(clock.now + 31 * DAY)
    first = prune(30 * DAY, dry_run=False, batch=2)
    # 2 + 2 + 1 Work batches, then one (empty) occurrence batch.
    assert (first.work, first.batches) == (5, 4)
    again = prune(30 * DAY, dry_run=False, batch=2)
    assert (again.work, again.permits, again.work_history) == (0, 0, 0)
    assert prune(30 * DAY, dry_run=True).work == 0


def test_prune__each_scope_only_its_own_rows(clock, define):
    finished_work(define, 1, scope="tenant-a", name="retention.a")
    finished_work(define, 1, scope="tenant-b", name="retention.b")
    clock.set(clock.now + 31 * DAY)
    result = prune(30 * DAY, dry_run=False)
    assert (result.scopes, result.work) == (2, 2)
    assert count("durable_work_retention_mark") == 2


def test_prune__skipped_occurrences_go_materialized_ones_stay(clock, target):
    ten = timedelta(minutes=10)
    schedules.create("tenant-a", "s", schedules.Every(ten), target, misfire="skip")
    assert schedule_pass(clock, T0 + 45 * ten / 10).skipped == 1  # 12:10-12:40 missed
    assert schedule_pass(clock, T0 + 5 * ten).materialized == 1  # 12:50, the cursor passes
    assert sorted(rows("select state from durable_schedule_occurrence")) == [
        ("materialized",), ("skipped",)]
    clock.set(clock.now + 31 * DAY)
    assert prune(30 * DAY, dry_run=True).occurrences == 1
    assert prune(30 * DAY, dry_run=False).occurrences == 1
    assert rows("select state from durable_schedule_occurrence") == [("materialized",)]


def test_prune__a_skipped_range_the_cursor_has_not_passed_is_kept(clock, target):
    ten = timedelta(minutes=10)
    schedules.create("tenant-a", "s", schedules.Every(ten), target, misfire="skip")
    assert schedule_pass(clock, T0 + 45 * ten / 10).skipped == 1  # cursor = its last instant
    clock.set(clock.now + 31 * DAY)
    assert prune(30 * DAY, dry_run=False).occurrences == 0


def rows(sql: str):
    with connection.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_prune__old_heartbeats_go_live_ones_stay(clock):
    old = Heartbeat("work", lease_owner="gone:1", interval=3600)
    old.write(stopping=True)
    clock.set(clock.now + 2 * DAY)
    Heartbeat("work", lease_owner="live:1", interval=3600).write()
    result = prune(timedelta(days=1), dry_run=False)
    assert result.heartbeats == 1
    assert [r[0] for r in rows("select lease_owner from durable_runner_heartbeat")] == ["live:1"]


def test_prune_command__dry_run_output_and_bad_age(clock, define):
    finished_work(define, 1)
    clock.set(clock.now + 31 * DAY)
    out = StringIO()
    call_command("durable_prune", "--older-than", "30d", "--dry-run", stdout=out)
    assert "would remove (older than 30 days, 0:00:00, 1 scopes): history of 1 terminal Work" \
        in out.getvalue()
    assert count("durable_work_permit") == 1
    with pytest.raises(CommandError, match="DS427"):
        call_command("durable_prune", "--older-than", "30s", stdout=StringIO())
    with pytest.raises(CommandError, match="DS427"):
        call_command("durable_prune", "--older-than", "30d", "--batch", "0", stdout=StringIO())
    call_command("durable_prune", "--older-than", "30d", stdout=out)
    assert count("durable_work_permit") == 0
    assert json.loads(rows("select result from durable_work")[0][0]) == {"done": 0}
