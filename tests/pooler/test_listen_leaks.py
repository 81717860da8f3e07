"""The runner's NOTIFY self-test leaves no LISTEN on a pooled server session.

PgBouncer in transaction mode runs a client's ``LISTEN`` on whichever server session is free
and never resets it (``DISCARD ALL`` is session mode's reset): the next client handed that
server session inherits the registration. The self-test (runner/pooler.py ``notify_works``)
LISTENs on a channel of its own; through such a pooler its notification never arrives and the
runner falls back to polling. Tested with a real PgBouncer and a single server connection, so
the next client gets the very server session the self-test used.
"""

from __future__ import annotations

import psycopg
import pytest

from durable_schedule.runner import loop, pooler, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

SESSION = "select pg_backend_pid(), array(select pg_listening_channels() order by 1)"


@pytest.fixture
def through(one_server, monkeypatch):
    """The runner's side connections (listener, self-test sender) go through the pooler."""
    params = psycopg.conninfo.conninfo_to_dict(one_server)
    monkeypatch.setattr(pooler, "connection_params", lambda: dict(params))
    monkeypatch.setattr(pooler, "NOTIFY_SELFTEST_SECONDS", 0.5)  # it never arrives here
    return one_server


def test_failed_notify_selftest__leaves_no_listen_for_the_next_client(through):
    with psycopg.connect(through, autocommit=True) as before:
        server, channels = before.execute(SESSION).fetchone()
    assert channels == []

    listener, retry = loop._open_listener("work", "durable_work_due")
    assert (listener, retry) == (None, False)  # polling: NOTIFY does not deliver here
    assert state.snapshot()["work"]["notify_ok"] is False

    with psycopg.connect(through, autocommit=True) as after:
        backend, channels = after.execute(SESSION).fetchone()
    assert backend == server  # the same server session, handed to the next client
    assert channels == []


def test_passed_notify_selftest__keeps_only_the_runners_own_listen(transactional_db):
    listener, _ = loop._open_listener("work", "durable_work_due")
    assert listener is not None  # a direct connection delivers
    try:
        assert listener.execute(SESSION).fetchone()[1] == ["durable_work_due"]
    finally:
        listener.close()
