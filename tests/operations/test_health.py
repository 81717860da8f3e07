"""Issue 12 item 3: runner heartbeats, live and dead runners, thresholds, "no live runner for
due work", and durable_status on an unreachable store (exit 2, valid JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection
from django.test import override_settings

from durable_schedule.observability.heartbeat import Heartbeat
from durable_schedule.operations.status import collect
from tests.runner.loophelpers import ROOT
from tests.store.seed import seed_scope

pytestmark = pytest.mark.django_db

BEAT = ("select durable_runner_beat(%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)")


def status(*args) -> tuple[int, dict | str]:
    out = StringIO()
    try:
        call_command("durable_status", *args, stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    text = out.getvalue()
    return code, (json.loads(text) if "--json" in args else text)


def heartbeat_rows():
    with connection.cursor() as cur:
        cur.execute("select kind, lease_owner, pid, passes, last_counts, started_at, beat_at,"
                    " last_pass_at, stopped_at from durable_runner_heartbeat")
        # Django's connection reads jsonb as text.
        return [(*r[:4], json.loads(r[4]), *r[5:]) for r in cur.fetchall()]


def test_heartbeat__start_pass_stop_records_the_runner_with_database_times(clock):
    beat = Heartbeat("work", lease_owner="host-a:11", interval=3600)
    beat.start()
    [(kind, owner, pid, passes, counts, started, beat_at, last_pass, stopped)] = heartbeat_rows()
    assert (kind, owner, pid, passes, counts, started, beat_at, last_pass, stopped) == (
        "work", "host-a:11", os.getpid(), 0, {}, clock.now, clock.now, None, None)
    beat.record_pass({"claimed": 2, "succeeded": 2})
    clock.set(clock.now + timedelta(seconds=30))
    beat.stop()
    [(_, _, _, passes, counts, started, beat_at, last_pass, stopped)] = heartbeat_rows()
    assert (passes, counts) == (1, {"claimed": 2, "succeeded": 2})
    assert beat_at == stopped == clock.now
    assert started == clock.now - timedelta(seconds=30)
    # The pass happened (in monotonic time) just before the stop: the database stamps it then.
    assert clock.now - timedelta(seconds=5) <= last_pass <= clock.now


def test_heartbeat__runtime_role_writes_only_through_the_function(pg):
    cur = pg.cursor()
    cur.execute("set local role durable_runtime")
    runner = uuid.uuid4()
    cur.execute(BEAT, [runner, "schedule", "o", "h", 7, "0.1.0", None, 0, "{}", False])
    for statement in ("select * from durable_runner_heartbeat",
                      "delete from durable_runner_heartbeat",
                      "update durable_runner_heartbeat set pid = 1"):
        cur.execute("savepoint s")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            cur.execute(statement)
        cur.execute("rollback to savepoint s")
    cur.execute("reset role")
    cur.execute("select has_function_privilege('public', 'durable_runner_beat(uuid, text, text,"
                " text, integer, text, double precision, bigint, jsonb, boolean)', 'EXECUTE')")
    assert cur.fetchone()[0] is False
    cur.execute("select relrowsecurity from pg_class where relname = 'durable_runner_heartbeat'")
    assert cur.fetchone()[0] is False  # not tenant data: no scope, no policy


@pytest.mark.parametrize("args", [
    [None, "work", "o", "h", 1, "v", None, 0, "{}", False],
    [uuid.uuid4(), "cron", "o", "h", 1, "v", None, 0, "{}", False],
    [uuid.uuid4(), "work", "", "h", 1, "v", None, 0, "{}", False],
    [uuid.uuid4(), "work", "o\n", "h", 1, "v", None, 0, "{}", False],
    [uuid.uuid4(), "work", "o", "h", 0, "v", None, 0, "{}", False],
    [uuid.uuid4(), "work", "o", "h", 1, "v", -1.0, 0, "{}", False],
    [uuid.uuid4(), "work", "o", "h", 1, "v", None, 0, "[]", False],
    [uuid.uuid4(), "work", "o", "h", 1, "v" * 65, None, 0, "{}", False],
], ids=["no-id", "kind", "blank-owner", "control-char", "pid", "negative-since", "counts-array",
        "long-version"])
def test_heartbeat__bad_arguments_are_refused_with_ds425_and_write_nothing(pg, args):
    cur = pg.cursor()
    cur.execute("set local role durable_runtime")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="DS425"):
        cur.execute(BEAT, args)
    pg.rollback()
    assert pg.execute("select count(*) from durable_runner_heartbeat").fetchone()[0] == 0


def test_heartbeat__a_runner_id_stays_bound_to_its_process(pg):
    cur = pg.cursor()
    cur.execute("set local role durable_runtime")
    runner = uuid.uuid4()
    cur.execute(BEAT, [runner, "work", "o", "h", 7, "v", None, 0, "{}", False])
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="DS425.*another runner"):
        cur.execute(BEAT, [runner, "work", "o", "h", 8, "v", None, 0, "{}", False])


def test_status__lists_live_then_dead_runners_by_heartbeat_age(clock):
    beat = Heartbeat("schedule", lease_owner="host-b:1", interval=3600)
    beat.start()
    code, report = status("--json")
    assert [(r["kind"], r["state"], r["lease_owner"]) for r in report["runners"]] == [
        ("schedule", "live", "host-b:1")]
    assert report["warnings"] == []
    clock.set(clock.now + timedelta(seconds=61))  # RUNNER_DEAD_SECONDS defaults to 60
    code, report = status("--json")
    assert [r["state"] for r in report["runners"]] == ["dead"]
    assert any("is dead: no heartbeat for 61s" in w for w in report["warnings"])
    beat.write()  # it beats again: alive
    code, report = status("--json")
    assert [r["state"] for r in report["runners"]] == ["live"]
    beat.stop()
    code, report = status("--json")
    assert [r["state"] for r in report["runners"]] == ["stopped"]


def _due_schedule(clock, seconds_late: float, scope="tenant-a", schedule="a"):
    with connection.cursor() as cur:
        seed_scope(cur, scope, schedule)
        cur.execute("update durable_schedule_dispatch set due_at = %s where schedule_id = %s",
                    [clock.now - timedelta(seconds=seconds_late), schedule])
        cur.execute("delete from durable_work_dispatch")  # the seed's Work is due in 2026


def test_status__due_work_without_a_live_runner_is_a_problem(clock):
    call_command("durable_partitions", stdout=StringIO())
    _due_schedule(clock, 120)
    code, report = status("--json")
    assert code == 1
    assert any(p.startswith("no live schedule runner for due work: 1 rows due, oldest 120s")
               for p in report["problems"]), report["problems"]
    Heartbeat("schedule", lease_owner="host-c:1", interval=3600).write()
    code, report = status("--json")
    assert not any("no live schedule runner" in p for p in report["problems"])
    assert code == 0, report["problems"]


def test_status__due_work_younger_than_the_dead_threshold_is_not_flagged(clock):
    call_command("durable_partitions", stdout=StringIO())
    _due_schedule(clock, 30)  # a cron-driven pass may simply not have run yet
    code, report = status("--json")
    assert code == 0, report["problems"]


@override_settings(DURABLE_SCHEDULE={"LATENESS_ALERT_SECONDS": 100, "BACKLOG_ALERT": 1})
def test_status__lateness_and_backlog_thresholds_come_from_settings(clock):
    call_command("durable_partitions", stdout=StringIO())
    Heartbeat("schedule", lease_owner="host-d:1", interval=3600).write()
    _due_schedule(clock, 150, "tenant-a", "a")
    _due_schedule(clock, 10, "tenant-b", "b")
    code, report = status("--json")
    assert code == 1
    assert report["thresholds"]["lateness_alert_seconds"] == 100
    assert "schedule queue: oldest due row is 150s late (threshold 100s)" in report["problems"]
    assert "schedule queue: 2 rows due (threshold 1)" in report["problems"]


def test_status__text_output_names_runners_and_last_hour(clock):
    Heartbeat("work", lease_owner="host-e:1", interval=3600).write()
    code, text = status()
    assert "runner       work live host-e:1" in text
    assert "last hour    -" in text


def test_status__finished_last_hour_counts_terminal_work_by_state(clock, define):
    from tests.work.conftest import run_pass

    ok = define("health.ok")
    ok.executor(lambda ctx, payload: {})
    for n in range(2):
        ok.enqueue(scope="tenant-a", command=f"c-{n}", idempotency_key="k", payload={})
    run_pass()
    report = collect()
    assert report.finished_last_hour == {"succeeded": 2}
    clock.set(clock.now + timedelta(hours=1, seconds=1))
    assert collect().finished_last_hour == {}


def test_status__unreachable_store_exits_two_with_valid_json():
    # A real process whose DATABASE_URL points at a port nothing listens on.
    env = dict(os.environ, DATABASE_URL="postgresql://postgres@127.0.0.1:9/none",
               PGCONNECT_TIMEOUT="3")
    proc = subprocess.run([sys.executable, "testproject/manage.py", "durable_status", "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert report["reachable"] is False and report["healthy"] is False
    assert report["problems"][0].startswith("DS426: the store cannot be reached: ")
    text = subprocess.run([sys.executable, "testproject/manage.py", "durable_status"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert text.returncode == 2 and "Traceback" not in text.stderr
    assert "DS426" in text.stdout


def test_status__a_connection_lost_mid_report_is_reported_as_unreachable(clock, monkeypatch):
    from durable_schedule.operations import status as status_module

    def broken(cur):
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(status_module, "queue_health", broken)
    code, report = status("--json")
    assert code == 2
    assert report["problems"] == [
        "DS426: the store cannot be reached: DatabaseError: server closed the connection "
        "unexpectedly"]


def test_settings__health_thresholds_are_validated():
    from durable_schedule import conf

    for bad in ({"HEARTBEAT_SECONDS": 0}, {"RUNNER_DEAD_SECONDS": 5},
                {"BACKLOG_ALERT": "many"}, {"METRICS_PORT": 70000},
                {"METRICS_TOKEN": "short"}):
        with override_settings(DURABLE_SCHEDULE=bad), pytest.raises(ValueError):
            conf.validate()


def test_routing_registry__lists_every_scope_once_and_only_for_the_owner(clock, define, pg):
    from durable_schedule.operations.scopes import routing_ids

    ok = define("health.registry")
    ok.executor(lambda ctx, payload: {})
    for n in range(3):  # the same scope three times: one registry row
        ok.enqueue(scope="tenant-r", command=f"c-{n}", idempotency_key="k", payload={})
    ok.enqueue(scope="tenant-s", command="c", idempotency_key="k", payload={})
    with connection.cursor() as cur:
        cur.execute("select routing_id from durable_schedule_scope order by 1")
        assert routing_ids() == [r[0] for r in cur.fetchall()]
    assert len(routing_ids()) == 2
    cur = pg.cursor()
    cur.execute("select has_table_privilege('durable_runtime', 'durable_schedule_routing',"
                " 'SELECT,INSERT,UPDATE,DELETE'), has_table_privilege('durable_dispatcher',"
                " 'durable_schedule_routing', 'SELECT')")
    assert cur.fetchone() == (False, False)


def test_status__a_grant_on_the_heartbeat_table_is_reported_as_drift(clock):
    with connection.cursor() as cur:
        cur.execute("grant select on durable_runner_heartbeat to durable_runtime")
    code, report = status("--json")
    assert code == 2
    assert "durable_runtime has unexpected SELECT on durable_runner_heartbeat" in \
        report["role_problems"]


def test_heartbeat__a_store_without_the_function_is_a_ds401(clock):
    from durable_schedule.errors import SchemaBelowFloor

    with connection.cursor() as cur:
        cur.execute("drop function durable_runner_beat(uuid, text, text, text, integer, text,"
                    " double precision, bigint, jsonb, boolean)")
    with pytest.raises(SchemaBelowFloor) as err:
        Heartbeat("work", lease_owner="old-store:1", interval=3600).start()
    assert err.value.code == "DS401"


def test_status_metrics__unreachable_store_exits_two_with_store_up_zero():
    env = dict(os.environ, DATABASE_URL="postgresql://postgres@127.0.0.1:9/none",
               PGCONNECT_TIMEOUT="3")
    proc = subprocess.run([sys.executable, "testproject/manage.py", "durable_status",
                           "--metrics"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "durable_schedule_store_up 0.0" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("table", ["durable_schedule_store", "durable_work_dispatch"])
@pytest.mark.parametrize("args", [["--json"], ["--metrics"], []])
def test_status__a_lock_held_on_a_store_table_is_answered_not_waited_for(table, args):
    # Another session holds ACCESS EXCLUSIVE on a store table and the command's connection has
    # no lock_timeout of its own: the probe's bound makes it answer "not answering" (DS426,
    # exit 2, store_up 0) instead of waiting for as long as the lock is held. The outer
    # timeout is only a safety net; the assertions are on what the command says.
    from tests.conftest import database_url

    env = dict(os.environ, DATABASE_URL=database_url(), PGOPTIONS="")
    with psycopg.connect(database_url()) as holder:
        holder.execute(f"lock table {table} in access exclusive mode")
        proc = subprocess.run([sys.executable, "testproject/manage.py", "durable_status",
                               "--timeout", "0.5", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        holder.rollback()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    if args == ["--metrics"]:
        assert "durable_schedule_store_up 0.0" in proc.stdout
    elif args == ["--json"]:
        report = json.loads(proc.stdout)
        assert report["reachable"] is False
        # Both bounds are equal: whichever PostgreSQL notices first cancels the wait.
        assert report["problems"] in ([
            "DS426: the store cannot be reached: OperationalError: canceling statement due to "
            f"{bound} timeout"] for bound in ("lock", "statement"))
    else:
        assert "problem: DS426: the store cannot be reached: OperationalError: canceling " \
            "statement due to" in proc.stdout


def test_status__the_bound_is_transaction_local_and_keeps_a_lower_setting(clock):
    from durable_schedule.operations import probe

    with connection.cursor() as cur:
        cur.execute("set local lock_timeout = '200ms'")
        with probe.bounded_transaction(seconds=3) as inner:
            inner.execute("select current_setting('lock_timeout'),"
                          " current_setting('statement_timeout')")
            assert inner.fetchone() == ("200ms", "3s")
        cur.execute("select current_setting('lock_timeout'), current_setting('statement_timeout')")
        assert cur.fetchone() == ("200ms", "0")  # the caller's transaction is as it was
