"""A transaction-mode pooler without prepared-statement support (PgBouncer < 1.21) can hand a
client's transaction to a server session where *another* client prepared a statement under the
same psycopg name (``_pg3_0``, ``_pg3_1``, ...). The client then binds its parameters to that
other statement (docs/operations.md "Prepared statements and connection poolers"):

- with a different parameter count the server refuses the bind (08P01, protocol_violation):
  that is DS415 naming the setting, like the "already exists" / "does not exist" clashes, and
  not the connection loss its SQLSTATE class suggests (a --loop runner rode it out as an
  outage for OUTAGE_TOLERANCE_SECONDS, then exited with DS405, never saying why);
- with the same shape the other client's statement runs, undetected: why preparing must be off
  behind such a pooler.

The interleaving is forced with a two-server pool: a holder keeps one server session busy so
the next client is handed the other one (PgBouncer reuses the most recently freed session)."""

from __future__ import annotations

import psycopg
import pytest

from durable_schedule.errors import PoolerDropsPreparedStatements
from durable_schedule.runner.outage import is_connection_loss
from durable_schedule.runner.retry import is_transient
from durable_schedule.store.transactions import _ONLY_WHEN_ASKED, _PreparingCursor
from tests.conftest import database_url
from tests.pooler.pgbouncer import PgBouncer, find_binary

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


@pytest.fixture
def two_servers(transactional_db):
    """(url through a two-server PgBouncer, list of the test's connections: closed after)."""
    binary = find_binary()
    if binary is None:
        pytest.skip("PgBouncer is not installed")
    bouncer = PgBouncer(database_url(), binary=binary, pool_size=2)
    bouncer.start()
    opened: list[psycopg.Connection] = []
    try:
        yield bouncer.url(database_url()), opened
    finally:
        for conn in opened:
            conn.close()
        bouncer.close()


def _prepared(conn, sql, params):
    """A statement through the runtime's preparing cursor (store/transactions.py)."""
    return _PreparingCursor(psycopg.Cursor(conn)).execute(sql, params)


def _on_the_other_clients_session(pool, first_sql, first_params, second_sql, second_params):
    """Client 1 prepares ``first_sql`` on server session S1; client 2 prepares ``second_sql``
    on S2 (S1 is held), then S2 is held and S1 freed: client 2's next execution goes to S1,
    where the name it uses is client 1's statement. Returns that next execution."""
    url, opened = pool

    def connect(**kwargs):
        opened.append(psycopg.connect(url, **kwargs))
        return opened[-1]

    one = connect(autocommit=True, prepare_threshold=_ONLY_WHEN_ASKED)
    _prepared(one, first_sql, first_params)
    holder = connect()
    holder.execute("select 1")  # keeps S1 (the one client 1 just freed) busy
    two = connect(autocommit=True, prepare_threshold=_ONLY_WHEN_ASKED)
    _prepared(two, second_sql, second_params).fetchall()  # prepared on S2
    connect().execute("select 1")  # takes S2, the free one, and keeps it
    holder.rollback()  # S1 is the free one now
    return lambda params: _prepared(two, second_sql, params).fetchall()


def test_a_bind_to_another_clients_statement_of_another_shape_is_ds415(two_servers):
    again = _on_the_other_clients_session(two_servers, "select %s::text || %s::text",
                                          ["a", "b"], "select %s::int", [1])
    with pytest.raises(PoolerDropsPreparedStatements) as caught:
        again([2])
    assert caught.value.code == "DS415"
    assert "PREPARE_STATEMENTS" in caught.value.next_action
    assert "requires 2" in str(caught.value)
    # Not retried as a transient error, and not ridden out as an outage by a --loop runner.
    assert not is_transient(caught.value)
    assert not is_connection_loss(caught.value)


def test_a_statement_of_the_same_shape_runs_undetected(two_servers):
    # What no check can see: the reason to turn preparing off behind such a pooler.
    again = _on_the_other_clients_session(two_servers, "select 'client 1: ' || %s::text",
                                          ["x"], "select 'client 2: ' || %s::text", ["y"])
    assert again(["z"]) == [("client 1: z",)]


def test_a_pgbouncer_protocol_violation_of_its_own_is_still_a_connection_loss():
    # PgBouncer's own 08P01 ("server conn crashed?") names no prepared statement: unchanged.
    exc = psycopg.errors.ProtocolViolation("server conn crashed?")
    assert is_connection_loss(exc)
