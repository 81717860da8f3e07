"""After the server ends a session (``pg_terminate_backend``, a restart, a failover), the next
call on the same Django connection outside a transaction works on a new session, as the
connection's own role and with no scope (docs/protocol/storage.md "Roles and the two
transaction forms").

Before: ``enqueue`` outside ``transaction.atomic()`` (Django's autocommit, a worker script, a
shell, a management command) raised ``terminating connection due to administrator command`` and
then ``the connection is lost`` / ``the connection is closed`` on every later call, forever:
nothing outside Django's request cycle closed the dead connection, and the kept statement cursor
kept using it. The call that meets the cut itself still fails (its outcome is the database's
error, and a retry is compare-or-return safe)."""

from __future__ import annotations

import uuid

import pytest
from django.db import OperationalError, connection, transaction

from durable_schedule import work
from durable_schedule.store.transactions import SCOPE_SETTING
from durable_schedule.work import registry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def definition(committed_clock):
    made = registry.define("rvstore.lost_connection", "v1", safety="idempotent")
    yield made
    registry._unregister(made.name, made.version)
    # Whatever the test left, the database's teardown gets a live connection.
    connection.close()


def _enqueue(definition) -> bool:
    return work.enqueue("lost-connection", definition.request(
        command=f"c-{uuid.uuid4().hex}", idempotency_key="k", payload={})).created


def _terminate(pg_factory) -> None:
    killer = pg_factory(autocommit=True)
    killer.execute("select pg_terminate_backend(%s)", [connection.connection.info.backend_pid])


def _session() -> tuple[str, str]:
    with connection.cursor() as cur:
        cur.execute("select current_user, coalesce(current_setting(%s, true), '')",
                    [SCOPE_SETTING])
        return cur.fetchone()


@pytest.mark.parametrize("prepare", [True, False])
def test_enqueue__after_a_terminated_session_the_next_call_works(
        committed_clock, settings, pg_factory, definition, prepare):
    settings.DURABLE_SCHEDULE = {"PREPARE_STATEMENTS": prepare}
    own_role = _session()[0]
    assert _enqueue(definition)
    _terminate(pg_factory)
    with pytest.raises(OperationalError):
        _enqueue(definition)  # the call that meets the cut
    assert _enqueue(definition)
    assert _enqueue(definition)
    assert _session() == (own_role, "")


def test_reads__after_a_terminated_session_the_next_call_works(committed_clock, pg_factory,
                                                              definition):
    assert _enqueue(definition)
    _terminate(pg_factory)
    with pytest.raises(OperationalError):
        work.list("lost-connection")
    assert len(work.list("lost-connection")) == 1


def test_inside_a_caller_transaction__the_cut_is_the_callers_to_handle(
        committed_clock, pg_factory, definition):
    # Inside transaction.atomic() the connection is not replaced behind the caller's back: the
    # transaction is gone and the block must fail; the next call after it works.
    with pytest.raises(OperationalError), transaction.atomic():
        assert _enqueue(definition)
        _terminate(pg_factory)
        _enqueue(definition)
    assert _enqueue(definition)
