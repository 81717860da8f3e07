"""Operator commands (durable_prune, durable_partitions, durable_recover, sync_schedules) that meet
a database error they do not retry (another session holding a lock under a lock_timeout, a
disk-full error raised by the server) end with one DS307 line naming the SQLSTATE and what
committed before the error, not a traceback; what they committed stays, and a rerun finishes
(docs/operations.md "Operator commands and database errors")."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.operations.test_retention import count, finished_work
from tests.runner.loophelpers import sql

DAY = timedelta(days=1)


@pytest.fixture
def lock_holder():
    """Another session that holds ACCESS EXCLUSIVE locks on the named tables until the test ends
    (committed data only: a transactional test database)."""
    from tests.conftest import database_url

    held = []

    def hold(*tables: str) -> None:
        conn = psycopg.connect(database_url())
        conn.execute(f"lock table {', '.join(tables)} in access exclusive mode")
        held.append(conn)
        return conn

    yield hold
    for conn in held:
        conn.rollback()
        conn.close()


def lock_timeout() -> None:
    with connection.cursor() as cur:
        cur.execute("set lock_timeout = '100ms'")  # this session: the command's own connection


def reset_lock_timeout() -> None:
    with connection.cursor() as cur:
        cur.execute("reset lock_timeout")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("argv, table", [
    (["durable_prune", "--older-than", "30d"], "durable_schedule_routing"),
    (["durable_recover", "--bump-epoch"], "durable_schedule_store"),
    (["durable_partitions"], "durable_schedule_history_default"),
    (["durable_partitions", "--dry-run"], "durable_schedule_history_default"),
    (["sync_schedules"], "durable_schedule_definition"),
])
def test_command__a_lock_held_by_another_session_is_one_ds307_line(argv, table, lock_holder):
    epoch = sql("select runtime_epoch from durable_schedule_store")
    holder = lock_holder(table)
    lock_timeout()
    try:
        with pytest.raises(CommandError) as caught:
            call_command(*argv, stdout=StringIO())
    finally:
        reset_lock_timeout()
        holder.rollback()  # the lock goes: the check below must not wait for it
    text = str(caught.value)
    assert text.startswith(f"DS307: {argv[0]} stopped by a database error: OperationalError: "
                           "canceling statement due to lock timeout"), text
    assert "sqlstate='55P03'" in text and "committed_before=" in text
    assert "\n" not in text  # the server's LINE/caret lines folded into the one line
    assert sql("select runtime_epoch from durable_schedule_store") == epoch  # nothing changed


@pytest.mark.django_db
def test_prune__a_disk_full_error_after_some_batches_says_what_they_removed(clock, define):
    finished_work(define, 3)
    clock.set(clock.now + 31 * DAY)
    # The last step (old heartbeats) fails as a full disk would; the Work batches committed.
    with connection.cursor() as cur:
        cur.execute("""
            create function review_disk_full() returns trigger language plpgsql as $$
            begin raise exception 'could not extend file: No space left on device'
                  using errcode = '53100'; end $$;
            create trigger review_disk_full before delete on durable_runner_heartbeat
               for each statement execute function review_disk_full();
        """)
    with pytest.raises(CommandError) as caught:
        call_command("durable_prune", "--older-than", "30d", "--batch", "1", stdout=StringIO())
    text = str(caught.value)
    assert text.startswith("DS307: durable_prune stopped by a database error: "), text
    assert "No space left on device" in text and "sqlstate='53100'" in text
    assert "committed_before='work=3, permits=3, " in text
    assert "batches=5" in text  # three of one Work each, one that found none, occurrences
    assert count("durable_work_permit") == 0 and count("durable_work") == 3
    with connection.cursor() as cur:
        cur.execute("drop trigger review_disk_full on durable_runner_heartbeat")
    out = StringIO()
    call_command("durable_prune", "--older-than", "30d", stdout=out)  # the rerun finishes
    assert "history of 0 terminal Work" in out.getvalue()
