"""Shared fixtures: real PostgreSQL (pytest-django's test database, migrated), the controlled
clock seam, and raw psycopg connections for tests that must act as the real roles."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from django.db import connection

from durable_schedule.testing import ControlledClock, reset_store

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock(db):
    """The clock seam fixed at T0 inside the test's transaction (rolled back with it)."""
    c = ControlledClock()
    c.set(T0)
    return c


@pytest.fixture
def committed_clock(transactional_db):
    """The clock seam for tests that commit (and for subprocesses): restored afterwards."""
    c = ControlledClock()
    c.set(T0)
    yield c
    c.restore()


def database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgresql://{auth}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.fixture
def pg(django_db_setup, django_db_blocker):
    """A raw psycopg connection to the migrated test database, as the owner. Everything it does
    is rolled back at the end; tests switch roles with ``SET LOCAL ROLE`` inside it."""
    with django_db_blocker.unblock():
        url = database_url()
    conn = psycopg.connect(url)
    try:
        yield conn
    finally:
        conn.rollback()
        conn.close()


@pytest.fixture
def pg_factory(django_db_setup, django_db_blocker):
    """Opens further raw connections (for concurrency tests); all closed at the end."""
    with django_db_blocker.unblock():
        url = database_url()
    opened: list[psycopg.Connection] = []

    def open_connection(**kwargs) -> psycopg.Connection:
        conn = psycopg.connect(url, **kwargs)
        opened.append(conn)
        return conn

    yield open_connection
    for conn in opened:
        conn.rollback() if not conn.autocommit else None
        conn.close()


def truncate_durable_tables(cur) -> None:
    """Empty the store: the public test helper, on the cursor's connection."""
    reset_store(cur.db.alias)


@pytest.fixture(autouse=True)
def _unmeasured_claim_sizer():
    """Each test's Work passes start with an unmeasured claim sizer (durable_schedule/work/
    sizing.py keeps one per process): one test's slow executors never shrink another's claims."""
    from durable_schedule.work import sizing

    sizing.forget()
    yield
    sizing.forget()


@pytest.fixture(autouse=True)
def _clean_store_after_committing_tests(request):
    """Tests that commit leave rows Django's flush cannot remove: Django truncates only the
    managed tables, without CASCADE. Empty the whole store first (runs before the flush)."""
    marker = request.node.get_closest_marker("django_db")
    commits = "transactional_db" in request.fixturenames or (
        marker is not None and marker.kwargs.get("transaction", False)
    )
    if not commits:
        yield
        return
    request.getfixturevalue("transactional_db")
    yield
    with connection.cursor() as cur:
        truncate_durable_tables(cur)


# The crash suite's options (--soak-seed, --soak-long) wherever pytest is started from.
from tests.crash.conftest import pytest_addoption  # noqa: E402,F401
