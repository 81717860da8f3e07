"""``work.enqueue`` / ``enqueue_many`` / ``schedules.create`` inside a caller's transaction that
already failed (an earlier statement raised inside the same ``transaction.atomic()``):
DS441 ``TransactionAborted`` naming the cause and saying to leave the block and retry, instead
of psycopg's ``InFailedSqlTransaction`` (SQLSTATE 25P02) or Django's
``TransactionManagementError``; nothing is written (docs/work.md "Accepting Work")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction

from durable_schedule import schedules, work
from durable_schedule.errors import DurableError, TransactionAborted
from durable_schedule.work.enqueue import WorkRequest
from tests.conftest import T0
from tests.work.conftest import count

pytestmark = pytest.mark.django_db


def request(n: int) -> WorkRequest:
    return WorkRequest(command_id=f"aborted-{n}", idempotency_key="k", work_name="t.aborted",
                       work_version="v1", payload={"n": n}, provider_safety="idempotent")


def fail_raw_statement() -> None:
    """A raw statement that fails, caught by the caller: PostgreSQL aborts the transaction
    (25P02 for every later statement), Django does not know."""
    with connection.cursor() as cur:
        try:
            cur.execute("select 1/0")
        except DatabaseError:
            pass


def fail_marked_block() -> None:
    """A failure Django noticed (as after a caught ORM IntegrityError): the atomic block is
    marked for rollback and Django refuses every further query."""
    try:
        with transaction.atomic(savepoint=False), connection.cursor() as cur:
            cur.execute("select 1/0")
    except DatabaseError:
        pass


CALLS = {
    "enqueue": lambda d: work.enqueue("tenant-a", request(1)),
    "enqueue_many": lambda d: work.enqueue_many("tenant-a", [request(2), request(3)]),
    "schedules.create": lambda d: schedules.create(
        "tenant-a", "aborted-schedule", schedules.At(T0 + timedelta(hours=1)),
        d.target(payload={}), actor="test"),
}


@pytest.fixture
def aborted_target(define):
    d = define("t.aborted")
    d.executor(lambda ctx, payload: {})
    return d


@pytest.mark.parametrize("failure", [fail_raw_statement, fail_marked_block],
                         ids=["postgresql_aborted", "django_marked"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_call_in_a_failed_transaction_is_ds441_and_writes_nothing(clock, aborted_target,
                                                                     failure, call):
    before = (count("durable_work"), count("durable_schedule_definition"))
    with pytest.raises(TransactionAborted) as err, transaction.atomic():
        failure()
        CALLS[call](aborted_target)
    assert isinstance(err.value, DurableError)
    assert err.value.code == "DS441"
    text = str(err.value)
    assert "roll" in text and "retry" in text, text
    # Left the atomic block: it rolled back; nothing was written, and the retry succeeds.
    assert (count("durable_work"), count("durable_schedule_definition")) == before
    CALLS[call](aborted_target)
    assert (count("durable_work"), count("durable_schedule_definition")) != before
