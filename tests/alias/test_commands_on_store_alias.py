"""Every management command works on the store's alias (DURABLE_SCHEDULE['DATABASE'] =
"store", a real second database): what it reads and writes is there, and "default" (which also
holds a migrated store in the test project) stays untouched."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections

from durable_schedule import schedules, work
from durable_schedule.testing import ControlledClock
from durable_schedule.work import registry
from tests.alias.conftest import ALIAS, DATABASES

pytestmark = pytest.mark.django_db(transaction=True, databases=DATABASES)


def scalar(alias: str, sql: str):
    with connections[alias].cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()[0]


@pytest.fixture
def job():
    definition = registry.define("alias_tests.job", "v1", safety=work.ProviderSafety.IDEMPOTENT)
    definition.executor(lambda ctx, payload: {"ran": True})
    yield definition
    registry._unregister(definition.name, definition.version)


def _accept(job, n: int = 2) -> None:
    for i in range(n):
        job.enqueue(scope="tenant-c", command="c", idempotency_key=f"k{i}", payload={})


def test_process_work_runs_the_store_alias_work(on_store, job):
    _accept(job)
    out = StringIO()
    call_command("process_work", "--max-items", "5", "--no-heartbeat", stdout=out)
    assert scalar(ALIAS, "select count(*) from durable_work where state = 'succeeded'") == 2
    assert scalar("default", "select count(*) from durable_work") == 0


def test_process_schedules_materializes_on_the_store_alias(on_store, job):
    clock = ControlledClock()
    schedules.create("tenant-c", "soon", schedules.After(timedelta(minutes=1)),
                     target=job.target(payload={}), actor="t")
    try:
        clock.set(schedules.get("tenant-c", "soon").next_nominal_utc + timedelta(seconds=1))
        call_command("process_schedules", "--max-schedules", "5", stdout=StringIO())
    finally:
        clock.restore()
    assert scalar(ALIAS, "select count(*) from durable_schedule_occurrence") == 1
    assert scalar(ALIAS, "select count(*) from durable_work") == 1
    assert scalar("default", "select count(*) from durable_schedule_occurrence") == 0


def test_durable_status_reports_the_store_alias(on_store, job):
    _accept(job, 3)
    out = StringIO()
    call_command("durable_status", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["work_by_state"] == {"pending": 3}, report


def test_sync_schedules_creates_on_the_store_alias(on_store):
    call_command("sync_schedules", stdout=StringIO())
    assert scalar(ALIAS, "select count(*) from durable_schedule_definition") >= 1
    assert scalar("default", "select count(*) from durable_schedule_definition") == 0


def test_durable_recover_bumps_the_store_alias_epoch(on_store):
    call_command("durable_recover", "--bump-epoch", stdout=StringIO())
    assert scalar(ALIAS, "select runtime_epoch from durable_schedule_store") == 2
    assert scalar("default", "select runtime_epoch from durable_schedule_store") == 1


def test_durable_prune_and_partitions_and_tz_rules_run_on_the_store_alias(on_store, job):
    _accept(job)
    call_command("process_work", "--max-items", "5", "--no-heartbeat", stdout=StringIO())
    clock = ControlledClock()
    clock.set(scalar(ALIAS, "select now()") + timedelta(hours=3))
    out = StringIO()
    try:
        call_command("durable_prune", "--older-than", "1h", stdout=out)
    finally:
        clock.restore()
    assert scalar(ALIAS, "select count(*) from durable_work_history") == 0, out.getvalue()
    assert "2 terminal Work" in out.getvalue()
    call_command("durable_partitions", stdout=StringIO())
    tz = StringIO()
    call_command("durable_tz_rules", "--json", stdout=tz)
    json.loads(tz.getvalue())



def test_runner_heartbeat_and_dashboard_on_the_store_alias(on_store, client, django_user_model):
    from django.urls import reverse

    from durable_schedule.observability.heartbeat import Heartbeat

    Heartbeat("work", lease_owner="w-store").write()  # what a --loop runner writes first
    assert scalar(ALIAS, "select count(*) from durable_runner_heartbeat") == 1
    assert scalar("default", "select count(*) from durable_runner_heartbeat") == 0
    client.force_login(django_user_model.objects.create_superuser("root", "r@example.com", "pw"))
    page = client.get(reverse("admin:durable_schedule_runnerheartbeat_changelist"))
    assert [r.lease_owner for r in page.context["report"].runners] == ["w-store"]


def test_process_work_slots_run_the_store_alias_work(on_store, job):
    _accept(job, 4)
    call_command("process_work", "--max-items", "4", "--concurrency", "2", "--batch", "1",
                 "--no-heartbeat", stdout=StringIO())
    assert scalar(ALIAS, "select count(*) from durable_work where state = 'succeeded'") == 4
    assert scalar("default", "select count(*) from durable_work") == 0


def test_async_executors_run_the_store_alias_work(on_store):
    definition = registry.define("alias_tests.async", "v1", safety=work.ProviderSafety.IDEMPOTENT)

    async def run(ctx, payload):
        return {"ran": True}

    definition.executor(run)
    try:
        for i in range(3):
            definition.enqueue(scope="tenant-c", command="c", idempotency_key=f"a{i}", payload={})
        call_command("process_work", "--max-items", "3", "--concurrency", "3",
                     "--no-heartbeat", stdout=StringIO())
    finally:
        registry._unregister(definition.name, definition.version)
    assert scalar(ALIAS, "select count(*) from durable_work where state = 'succeeded'") == 3
    assert scalar(ALIAS, "select count(*) from durable_work_history where event = 'succeeded'") \
        >= 3


def test_a_runner_serves_its_store_alias_only(on_store, job, settings):
    """docs/operations.md: Work accepted with using= another alias is run by a runner whose
    DURABLE_SCHEDULE['DATABASE'] names that alias, never by the store's runners."""
    job.enqueue(scope="tenant-c", command="c", idempotency_key="elsewhere", payload={},
                using="default")
    call_command("process_work", "--max-items", "5", "--no-heartbeat", stdout=StringIO())
    assert scalar("default", "select state from durable_work") == "pending"
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "DATABASE": "default"}
    call_command("process_work", "--max-items", "5", "--no-heartbeat", stdout=StringIO())
    assert scalar("default", "select state from durable_work") == "succeeded"


def test_work_loop_serves_the_store_alias(on_store, job):
    """The --loop runner in process: its server identity, heartbeat row and passes all on the
    store's alias (two passes, then it stops)."""
    from durable_schedule.runner import service
    from durable_schedule.runner.loop import StopFlag

    _accept(job, 2)
    stats = service.serve(
        "work", lambda stop: work.process_work_pass(stop=stop, max_items=5).as_dict(),
        stop=StopFlag(), max_passes=2, install_signals=False, lease_owner="loop-store")
    assert stats is not None
    assert scalar(ALIAS, "select count(*) from durable_work where state = 'succeeded'") == 2
    assert scalar(ALIAS, "select lease_owner from durable_runner_heartbeat") == "loop-store"
    assert scalar(ALIAS, "select stopped_at is not null from durable_runner_heartbeat")
    assert scalar("default", "select count(*) from durable_runner_heartbeat") == 0
