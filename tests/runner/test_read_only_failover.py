"""A failover can leave a runner talking to a server that only reads: the demoted primary or a
standby, reached through a stale DNS name or a pooler that still points at the old host (or an
operator's ``default_transaction_read_only``). Every write then fails with SQLSTATE 25006. No
runner phase runs a read-only transaction of its own, so this is the server, and a reconnect is
what can help: the bounded retry closes the session and connects anew, a ``--loop`` runner
treats it as an outage (its reconnect probe waits until the server takes writes) and gives up
with DS405 past ``OUTAGE_TOLERANCE_SECONDS``. Before, the first 25006 ended the command with a
raw ``CommandError`` ("cannot execute UPDATE in a read-only transaction"), no retry, no DS code.
"""

from __future__ import annotations

import psycopg
import pytest
from demo.work import touch
from django.db import DatabaseError, connection

from durable_schedule.runner import outage, retry
from durable_schedule.work.passes import process_work_once
from tests.conftest import database_url
from tests.runner.loophelpers import sql

pytestmark = pytest.mark.django_db(transaction=True)


def read_only_session() -> int:
    """This thread's connection turns read-only, as a session on a standby is; its pid."""
    with connection.cursor() as cur:
        cur.execute("set default_transaction_read_only = on")
    return connection.connection.info.backend_pid


def test_read_only__a_bounded_pass_reconnects_and_succeeds(committed_clock, monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))
    touch.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1", payload={})
    pid = read_only_session()
    counts = process_work_once()
    assert (counts.claimed, counts.succeeded) == (1, 1)
    assert connection.connection.info.backend_pid != pid  # the retry connected anew
    assert sql("select state from durable_work") == [("succeeded",)]


def test_read_only__is_an_outage_for_a_loop_and_the_probe_waits_for_writes(committed_clock):
    read_only_session()
    with pytest.raises(DatabaseError) as caught, connection.cursor() as cur:
        cur.execute("create temporary table t (x int)")
    assert retry.sqlstate_of(caught.value) == "25006"
    assert retry.is_transient(caught.value)
    assert outage.is_connection_loss(caught.value)
    connection.close()  # the test's own session: writable again for what follows
    # The reconnect probe: a fresh session on a read-only server is not "restored".
    alter = f"alter database {connection.settings_dict['NAME']} %s default_transaction_read_only"
    sql(alter % "set" + " = on")
    try:
        with pytest.raises(DatabaseError, match="read-only"):
            outage._database_answers()
    finally:
        with psycopg.connect(database_url(), autocommit=True,
                             options="-c default_transaction_read_only=off") as owner:
            owner.execute(alter % "reset")
    outage._database_answers()  # writable again: answers


def test_read_only__a_slot_drops_a_read_only_session_after_a_failed_attempt(committed_clock):
    # A --concurrency slot thread (or sync_to_async's thread) after a failover: its new session
    # landed on a server that only reads, and the executor's write failed there. The session
    # still answers SELECT 1; kept, it would fail every later attempt of the slot.
    from durable_schedule.work.broken_connections import drop_broken_connections

    pid = read_only_session()
    with pytest.raises(DatabaseError), connection.cursor() as cur:
        cur.execute("create temporary table t (x int)")  # the executor's failed write
    drop_broken_connections()
    assert connection.connection is None  # closed: the next attempt reconnects
    with connection.cursor() as cur:
        cur.execute("select pg_backend_pid(), current_setting('transaction_read_only')")
        assert cur.fetchone() != (pid, "on")


def test_read_only__a_slot_keeps_a_healthy_session_after_a_failed_attempt(committed_clock):
    from durable_schedule.work.broken_connections import drop_broken_connections

    with pytest.raises(DatabaseError), connection.cursor() as cur:
        cur.execute("select * from no_such_table")  # the executor's bug, a sound session
    assert connection.errors_occurred
    pid = connection.connection.info.backend_pid
    drop_broken_connections()
    assert connection.connection is not None
    assert connection.connection.info.backend_pid == pid
    assert connection.errors_occurred is False
