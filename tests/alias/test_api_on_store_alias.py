"""The public API on a store alias other than "default" (docs/api.md "Settings" ``DATABASE``;
docs/work.md ``using=``; docs/tasks.md ``OPTIONS["DATABASE"]``): calls without ``using=`` read
and write the store's alias only, and ``using=`` reaches exactly the alias it names."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connections, transaction

from durable_schedule import schedules, work
from durable_schedule.work import registry
from tests.alias.conftest import ALIAS, DATABASES

pytestmark = pytest.mark.django_db(transaction=True, databases=DATABASES)


def count(alias: str, table: str) -> int:
    with connections[alias].cursor() as cur:
        cur.execute(f"select count(*) from {table}")
        return cur.fetchone()[0]


@pytest.fixture
def job():
    definition = registry.define("alias_tests.api", "v1", safety=work.ProviderSafety.IDEMPOTENT)
    yield definition
    registry._unregister(definition.name, definition.version)


def test_schedule_calls_use_the_store_alias(on_store, job):
    schedules.create("t", "s", schedules.Every(timedelta(hours=1)), target=job.target(payload={}))
    schedules.suspend("t", "s", "note")
    assert schedules.get("t", "s").state == "suspended"
    assert count(ALIAS, "durable_schedule_definition") == 1
    assert count("default", "durable_schedule_definition") == 0
    assert count("default", "durable_schedule_history") == 0


def test_work_calls_without_using_use_the_store_alias(on_store, job):
    accepted = job.enqueue(scope="t", command="c", idempotency_key="k", payload={})
    assert work.get("t", accepted.work_id).state == "pending"
    assert [w.work_id for w in work.list("t")] == [accepted.work_id]
    assert work.cancel("t", accepted.work_id, actor="ops") == "canceled"
    assert count(ALIAS, "durable_work") == 1
    assert count("default", "durable_work") == 0


def test_using_default_reaches_default_only(on_store, job):
    accepted = job.enqueue(scope="t", command="c", idempotency_key="k", payload={},
                           using="default")
    assert work.get("t", accepted.work_id, using="default").state == "pending"
    assert [w.work_id for w in work.list("t", using="default")] == [accepted.work_id]
    assert work.list("t") == []
    assert count(ALIAS, "durable_work") == 0
    assert work.cancel("t", accepted.work_id, actor="ops", using="default") == "canceled"


def test_enqueue_joins_the_transaction_of_the_alias_it_uses(on_store, job):
    with pytest.raises(RuntimeError), transaction.atomic(using=ALIAS):
        job.enqueue(scope="t", command="c", idempotency_key="k", payload={})
        raise RuntimeError("the caller rolls back")
    assert count(ALIAS, "durable_work") == 0


def test_tasks_backend_database_option_reaches_that_alias_only(store_alias, settings):
    """DURABLE_SCHEDULE['DATABASE'] stays "default"; the backend's OPTIONS["DATABASE"] is
    "store": the task's Work, its run and its result are there, nothing in "default"."""
    from demo import tasks as demo
    from django.test import override_settings

    from durable_schedule.testing import reset_store
    from tests.work.conftest import run_pass

    backends = {"default": {"BACKEND": "durable_schedule.tasks.DurableBackend",
                            "QUEUES": ["default", "emails"], "OPTIONS": {"SCOPE": "demo"}},
                "second": {"BACKEND": "durable_schedule.tasks.DurableBackend",
                           "OPTIONS": {"SCOPE": "demo", "DATABASE": ALIAS}}}
    try:
        with override_settings(TASKS=backends):
            result = demo.add.using(backend="second").enqueue(2, 3)
            assert count(ALIAS, "durable_work") == 1
            assert count("default", "durable_work") == 0
            assert run_pass(using=ALIAS).succeeded == 1
            assert demo.add.using(backend="second").get_result(result.id).return_value == 5
    finally:
        reset_store(ALIAS)
        connections[ALIAS].close()


def test_an_atomic_block_on_default_does_not_include_the_store_writes(on_store, job):
    """docs/operations.md: only transaction.atomic(using=<store alias>) ties a call to the
    caller's commit; a plain atomic() is "default", another database."""
    with pytest.raises(RuntimeError), transaction.atomic():
        job.enqueue(scope="t", command="c", idempotency_key="k", payload={})
        raise RuntimeError("the caller rolls back its default transaction")
    assert count(ALIAS, "durable_work") == 1
