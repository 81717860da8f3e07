"""A ``--loop`` runner whose connection is cut and whose *own transient retry* reconnects to
another database (a DNS name or pooler entry switched over quickly, before the pass's retries
ran out) stops with DS446 before anything runs or is written there -- not only after an outage
the loop rode out (docs/operations.md "Failover and database outages"). Its heartbeat thread,
which reconnects on its own, writes nothing into the other database either, nor does the stop
record on the way out.

Real databases: the other one is a copy of the test database (same schema and rows, another
database oid); the switch is the connection settings every thread of the process reads, and the
cut is ``pg_terminate_backend`` of every session of the runner, as a failover does."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

import psycopg
import pytest
from django.db import OperationalError, connection

from durable_schedule.errors import ServerChanged
from durable_schedule.runner import outage, state
from durable_schedule.runner.loop import StopFlag
from durable_schedule.runner.retry import RETRIES
from durable_schedule.runner.service import serve
from tests.conftest import database_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def _admin(statement: str, params=()) -> list[tuple]:
    """Run ``statement`` on the server's maintenance database (not the test database)."""
    url = urlsplit(database_url())._replace(path="/postgres").geturl()
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def _beats_in(database: str) -> int:
    url = urlsplit(database_url())._replace(path=f"/{database}").geturl()
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("select count(*) from durable_runner_heartbeat").fetchone()[0]


@pytest.fixture
def other_database():
    """A copy of the test database under another name (another database oid)."""
    test_db = connection.settings_dict["NAME"]
    copy = f"{test_db}_other"
    connection.close()  # CREATE DATABASE ... TEMPLATE needs the template to itself
    _admin(f'drop database if exists "{copy}" with (force)')
    _admin(f'create database "{copy}" template "{test_db}"')
    try:
        yield test_db, copy
    finally:
        connection.settings_dict["NAME"] = test_db
        connection.close()
        _admin(f'drop database if exists "{copy}" with (force)')


@pytest.mark.parametrize("cuts", [1, RETRIES + 1], ids=["retried-pass", "ridden-out"])
def test_a_runner_reconnected_to_another_database_stops_with_ds446(settings, other_database,
                                                                    cuts):
    """``retried-pass``: the pass's own first retry reconnects (no outage the loop sees);
    ``ridden-out``: every retry fails, the loop rides the outage out and reconnects. Either
    way nothing runs or is written in the other database, the heartbeat's beats included."""
    test_db, copy = other_database
    settings.DURABLE_SCHEDULE = {"HEARTBEAT_SECONDS": 0.05, "RUNNER_DEAD_SECONDS": 60,
                                 "MAX_IDLE_SECONDS": 0.1, "OUTAGE_TOLERANCE_SECONDS": 30}
    state.reset()
    calls: list[int] = []
    passes_on: list[str] = []

    def run_once(stop) -> dict[str, int]:
        calls.append(1)
        if len(calls) == 2:
            # The switch-over: the name now leads to the other database, and every session of
            # this runner (this thread's, the heartbeat thread's) is cut.
            connection.settings_dict["NAME"] = copy
            _admin("select pg_terminate_backend(pid) from pg_stat_activity "
                   "where datname = %s and pid <> pg_backend_pid()", [test_db])
            time.sleep(0.3)  # real time for the heartbeat thread to meet its cut session
        if 2 <= len(calls) <= 1 + cuts:
            connection.close()
            raise OperationalError("server closed the connection unexpectedly")
        with connection.cursor() as cur:
            cur.execute("select current_database()")
            passes_on.append(cur.fetchone()[0])
        return {"claimed": 0}

    stop = StopFlag()
    timer = threading.Timer(60, stop.set)  # a bound against a loop that never ends
    timer.start()
    try:
        with pytest.raises(ServerChanged) as info:
            serve("work", run_once, stop=stop, install_signals=False, max_passes=3)
    finally:
        timer.cancel()
    assert info.value.code == "DS446"
    assert passes_on == [test_db]  # no pass ran against the other database
    assert _beats_in(copy) == 0  # neither the heartbeat thread nor the stop record wrote there


def test_a_server_that_will_not_tell_its_identity_is_served_unchecked(monkeypatch):
    """A server whose identity cannot be read (a stripped-down or managed one refusing
    ``pg_control_system()``) is served as before the check existed: the new connection works,
    nothing is refused, the session is left usable."""
    identity = outage.ServerIdentity()
    identity.learn()
    assert identity.known is not None

    def refused(conn=None):
        if conn is None:
            return real_read()
        with conn.cursor() as cur:  # a real failed statement on the new session
            cur.execute("select pg_control_system_refused()")
        raise AssertionError("unreachable")

    real_read = outage.ServerIdentity.read
    monkeypatch.setattr(outage.ServerIdentity, "read", staticmethod(refused))
    with identity.watching("work"):
        connection.close()
        with connection.cursor() as cur:
            cur.execute("select 1")
            assert cur.fetchone() == (1,)
    assert identity.changed is None


def test_the_identity_is_learnt_from_the_first_connection_when_unknown_at_start(other_database):
    test_db, copy = other_database
    identity = outage.ServerIdentity()  # the database was away when the loop started
    with identity.watching("work"):
        connection.close()
        with connection.cursor() as cur:
            cur.execute("select 1")
        assert identity.known == outage.ServerIdentity.read()
        connection.settings_dict["NAME"] = copy
        connection.close()
        with pytest.raises(ServerChanged):
            connection.ensure_connection()
        assert connection.connection is None  # closed: nothing goes over it
        connection.settings_dict["NAME"] = test_db
        with pytest.raises(ServerChanged):  # sticky: the process stops, whatever answers now
            connection.ensure_connection()
    connection.ensure_connection()  # the watch ends with the runner
