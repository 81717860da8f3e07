"""Issue 12 item 1: the commands through a real PgBouncer in transaction mode.

- With ``PREPARE_STATEMENTS = True``, a pooler that cannot keep prepared statements is
  refused with DS415 naming the setting: by the runners' startup probe, and by the runtime itself
  at the first clash (an enqueue from a second process), never as a raw traceback.
- With it off, both runners and enqueue work through the pooler; the loops find that NOTIFY does
  not arrive, say so once, count it, and poll.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import psycopg
import pytest
from demo.work import touch as touch_work

from durable_schedule import schedules
from durable_schedule.runner import loop, pooler, state
from tests.conftest import T0
from tests.runner.loophelpers import ROOT, sql, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SCOPE = "tenant-a"
HOUR = timedelta(hours=1)
NOTIFY_WARNING = "LISTEN/NOTIFY does not deliver"


def env_for(url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DATABASE_URL=url, PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def manage(url: str, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "testproject/manage.py", *args], cwd=ROOT,
                          env=env_for(url, **extra), capture_output=True, text=True, timeout=120)


def enqueue_script(key: str) -> str:
    return ("from demo.work import touch; "
            f"touch.enqueue(scope={SCOPE!r}, command='c-{key}', idempotency_key='k-{key}', "
            "payload={})")


@pytest.mark.parametrize("command", ["process_schedules", "process_work"])
def test_pooler__prepared_statements_on_is_refused_with_ds415_naming_the_setting(
        pooled_url, command):
    done = manage(pooled_url, command, DURABLE_PREPARE_STATEMENTS="1")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "DS415" in out and "PREPARE_STATEMENTS" in out, out
    assert "Traceback" not in out, out


def test_pooler__the_runtime_turns_a_prepared_statement_clash_into_ds415(pooled_url):
    # The reproduction: the first process works and leaves its prepared statements on
    # the server connection; the next process's first prepared statement clashes with them.
    first = manage(pooled_url, "shell", "-c", enqueue_script("1"), DURABLE_PREPARE_STATEMENTS="1")
    assert first.returncode == 0, first.stderr
    second = manage(pooled_url, "shell", "-c", enqueue_script("2"), DURABLE_PREPARE_STATEMENTS="1")
    out = second.stdout + second.stderr
    assert second.returncode != 0
    assert "PoolerDropsPreparedStatements" in out and "DS415" in out, out
    assert "PREPARE_STATEMENTS" in out, out
    assert sql("select idempotency_key from durable_work") == [("k-1",)]


def test_pooler__the_startup_probe_passes_on_a_direct_connection(transactional_db):
    pooler.check_prepared_statements()  # raises DS415 if it misjudged a direct connection


def test_pooler__commands_work_with_prepare_statements_off(pooled_url, committed_clock):
    target = touch_work.target(payload={})
    for i in range(3):
        schedules.create(SCOPE, f"s{i}", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    off = {"DURABLE_PREPARE_STATEMENTS": "0"}
    for _ in range(2):  # twice: the second process meets the first one's server connections
        done = manage(pooled_url, "process_schedules", "--passes", "3", **off)
        assert done.returncode == 0, done.stdout + done.stderr
    assert sql("select count(*) from durable_schedule_occurrence") == [(3,)]
    for _ in range(2):
        done = manage(pooled_url, "process_work", **off)
        assert done.returncode == 0, done.stdout + done.stderr
    assert sql("select state, count(*) from durable_work group by state") == [("succeeded", 3)]
    for key in ("a", "b"):
        done = manage(pooled_url, "shell", "-c", enqueue_script(key), **off)
        assert done.returncode == 0, done.stderr
    assert sql("select count(*) from durable_work") == [(5,)]


def test_pooler__notify_self_test_fails_through_the_pooler_and_the_loop_polls(pooled_url):
    proc = subprocess.Popen(
        [sys.executable, "testproject/manage.py", "process_work", "--loop"], cwd=ROOT,
        env=env_for(pooled_url, DURABLE_PREPARE_STATEMENTS="0", DURABLE_MAX_IDLE_SECONDS="0.5"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        touch_work.enqueue(scope=SCOPE, command="c-1", idempotency_key="k-1", payload={})
        wait_until(lambda: sql("select 1 from durable_work where state = 'succeeded'"),
                   timeout=60, what="the polled loop to run the Work")
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert out.count(NOTIFY_WARNING) == 1, out
    assert sql("select count(*) from demo_effect") == [(1,)]


def params_of(url: str) -> dict:
    return psycopg.conninfo.conninfo_to_dict(url)


def test_pooler__self_test_and_fallback_counter(pooled_url, monkeypatch):
    state.reset()
    # Direct: the notification arrives, the listener is kept, nothing is counted.
    direct = loop._listen_connection("work", "durable_work_due")
    assert direct is not None
    direct.close()
    assert state.snapshot()["work"]["notify_ok"] is True
    assert state.snapshot()["work"]["notify_fallbacks"] == 0
    # Through PgBouncer: LISTEN is accepted, the notification never arrives: poll, count it.
    monkeypatch.setattr(pooler, "connection_params", lambda: params_of(pooled_url))
    assert loop._listen_connection("work", "durable_work_due") is None
    snap = state.snapshot()["work"]
    assert snap["notify_ok"] is False and snap["notify_fallbacks"] == 1
