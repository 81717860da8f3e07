"""A call on a database where the store is not migrated (``migrate`` not run yet, or ``using=`` /
``DURABLE_SCHEDULE['DATABASE']`` naming another database) is ``SchemaMissing`` (DS402, "run
manage.py migrate") naming the alias, not psycopg's bare ``function
durable_schedule_accept_work(unknown, jsonb, boolean) does not exist`` (a ProgrammingError with
no DS code), from every transaction form: acceptance, reads, schedule commands, the runners'
forms. Nothing is written.

The store's absence is made here by renaming the entry function in the test's transaction
(rolled back with it): PostgreSQL then answers exactly as on an unmigrated database."""

from __future__ import annotations

import pytest
from demo import schedule_targets
from django.db import connection, transaction

from durable_schedule import schedules, work
from durable_schedule.errors import SchemaMissing
from durable_schedule.schedules import At
from durable_schedule.store import transactions
from durable_schedule.work import registry
from tests.conftest import T0

pytestmark = pytest.mark.django_db

ENTRY = {
    "accept": "durable_schedule_accept_work(text, jsonb, boolean)",
    "read": "durable_schedule_enter_scope_to_read(text)",
    "write": "durable_schedule_enter_scope(text)",
    "routed": "durable_schedule_enter_routed(bigint)",
}


def _drop(name: str) -> None:
    with connection.cursor() as cur:
        cur.execute(f"alter function {ENTRY[name]} rename to durable_gone_{name}")


@pytest.fixture
def definition():
    made = registry.define("rvstore.unmigrated", "v1", safety="idempotent")
    yield made
    registry._unregister(made.name, made.version)


def _refused(call, *, savepoint: bool = True) -> SchemaMissing:
    # In a savepoint of the test's transaction, so a second call can follow (a durable form
    # opens its own, and may not be nested in another block).
    with pytest.raises(SchemaMissing) as caught, transaction.atomic(savepoint=savepoint,
                                                                     durable=False):
        call()
    assert "migrate" in caught.value.next_action
    assert caught.value.context["using"] == "default"
    assert "does not exist" in caught.value.message
    return caught.value


def test_enqueue__on_an_unmigrated_store_is_ds402(definition):
    _drop("accept")
    _refused(lambda: work.enqueue("t", definition.request(
        command="c", idempotency_key="k", payload={})))


def test_reads__on_an_unmigrated_store_are_ds402():
    _drop("read")
    _refused(lambda: work.list("t"))
    _refused(lambda: schedules.get("t", "nightly"))


def test_schedule_commands__on_an_unmigrated_store_are_ds402(clock):
    _drop("write")
    _refused(lambda: schedules.create("t", "nightly", At(T0),
                                      schedule_targets.report.target(payload={})))


def test_routed__on_an_unmigrated_store_is_ds402():
    _drop("routed")

    def enter():
        with transactions.routed(1):
            pass
    with pytest.raises(SchemaMissing) as caught:
        enter()
    assert caught.value.context["using"] == "default"


def test_other_missing_functions_keep_their_own_error():
    # Only the store's own functions say "not migrated": a caller's SQL naming a function
    # that does not exist inside a scoped block is its own error.
    with pytest.raises(Exception) as caught, transaction.atomic(), \
            transactions.scoped("t", create=False) as cur:
        cur.execute("select no_such_function_here()")
    assert not isinstance(caught.value, SchemaMissing)
