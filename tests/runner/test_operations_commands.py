"""Issue 5 items 5-6: durable_status (--json, exit codes), durable_partitions, durable_recover."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection

from tests.store.seed import seed_scope

pytestmark = pytest.mark.django_db


def status(*args) -> tuple[int, dict | str]:
    from io import StringIO

    out = StringIO()
    try:
        call_command("durable_status", *args, stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    text = out.getvalue()
    return code, (json.loads(text) if "--json" in args else text)


def test_status__healthy_empty_store_exits_zero(clock):
    from io import StringIO

    call_command("durable_partitions", stdout=StringIO())  # the controlled clock is in 2030
    code, report = status("--json")
    assert code == 0, report["problems"]
    assert report["healthy"] is True
    assert report["schema_version"] == report["code_schema_version"]
    assert report["runtime_epoch"] == 1


def test_status__reports_a_suspended_schedule_with_its_reason(clock):
    with connection.cursor() as cur:
        seed_scope(cur, "tenant-a", "nightly")
        cur.execute(
            "update durable_schedule_definition set state = 'suspended',"
            " suspension_reason = 'clock_jump', suspended_at = now()"
        )
    code, report = status("--json")
    assert code == 1
    assert report["scopes"] == 1
    assert [(s["scope_id"], s["schedule_id"], s["reason"])
            for s in report["suspended_schedules"]] == [("tenant-a", "nightly", "clock_jump")]
    assert any("tenant-a/nightly suspended: clock_jump" in p for p in report["problems"])


def test_status__reports_a_missing_grant_and_exits_two(clock):
    with connection.cursor() as cur:
        cur.execute("revoke insert on durable_schedule_history from durable_runtime")
    code, report = status("--json")
    assert code == 2
    assert any("lacks INSERT on durable_schedule_history" in p for p in report["role_problems"])


def test_status__counts_due_backlog_lateness_and_expired_leases(clock):
    with connection.cursor() as cur:
        seed_scope(cur, "tenant-a", "a")  # seeds a schedule dispatch due a minute before now()
        cur.execute("update durable_schedule_dispatch set due_at = %s", [clock.now.replace(
            hour=11, minute=0)])
        seed_scope(cur, "tenant-b", "b")
        cur.execute(
            "update durable_schedule_dispatch set lease_owner = 'gone', due_at = %s,"
            " lease_expires_at = %s where schedule_id = 'b'",
            [clock.now.replace(hour=11, minute=30), clock.now.replace(hour=11, minute=30)],
        )
    code, report = status("--json")
    assert report["schedules"]["due"] == 1
    assert report["schedules"]["oldest_lateness_seconds"] == pytest.approx(3600.0)
    assert report["schedules"]["expired_leases"] == 1
    assert code == 1


def test_status__roles_prints_the_recipe(clock):
    code, text = status("--roles")
    assert "CREATE ROLE durable_runtime NOLOGIN" in text
    assert "GRANT EXECUTE ON FUNCTION claim_schedule_dispatch" in text


def test_partitions__command_creates_the_controlled_months(clock):
    from io import StringIO

    clock.set(clock.now.replace(year=2032, month=3))
    out = StringIO()
    call_command("durable_partitions", stdout=out)
    assert "durable_schedule_history_203203" in out.getvalue()
    assert "durable_schedule_history_203204" in out.getvalue()
    out = StringIO()
    call_command("durable_partitions", stdout=out)
    assert "already exist" in out.getvalue()


def test_status__flags_a_missing_next_month_partition(clock):
    clock.set(clock.now.replace(year=2033, month=7))
    code, report = status("--json")
    assert "durable_schedule_history_203307" in report["missing_partitions"]
    assert code == 1


def test_recover__dry_run_changes_nothing_and_bump_increments_the_epoch(clock):
    from io import StringIO

    out = StringIO()
    call_command("durable_recover", "--bump-epoch", "--dry-run", stdout=out)
    assert "dry run: runtime epoch 1 -> 2" in out.getvalue()
    with connection.cursor() as cur:
        cur.execute("select runtime_epoch from durable_schedule_store")
        assert cur.fetchone()[0] == 1
    call_command("durable_recover", "--bump-epoch", stdout=StringIO())
    with connection.cursor() as cur:
        cur.execute("select runtime_epoch from durable_schedule_store")
        assert cur.fetchone()[0] == 2
