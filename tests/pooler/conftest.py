"""Fixtures of the PgBouncer suite: a real PgBouncer in transaction mode per test, and the
crash suite's fixtures for the crash and soak tests this suite re-runs through it.

Without PgBouncer installed the suite is skipped with one line saying how to enable it, except
where DURABLE_REQUIRE_PGBOUNCER=1 (CI): there a missing PgBouncer fails the suite.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import database_url
from tests.crash.conftest import invoice, soak_long, soak_seed, touch  # noqa: F401
from tests.pooler.pgbouncer import HOW_TO_ENABLE, REQUIRE_ENV, PgBouncer, find_binary


def _bouncer(**options):
    binary = find_binary()
    if binary is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {HOW_TO_ENABLE}")
        pytest.skip(HOW_TO_ENABLE)
    bouncer = PgBouncer(database_url(), binary=binary, **options)
    bouncer.start()
    try:
        yield bouncer
    finally:
        bouncer.close()


@pytest.fixture
def pgbouncer(transactional_db):
    yield from _bouncer()


@pytest.fixture
def one_server(transactional_db) -> str:
    """The test database through a PgBouncer with a single server connection: the next client
    is handed the very server session the previous one used, so session state it left behind
    (a LISTEN, a role, a setting) is seen."""
    for bouncer in _bouncer(pool_size=1):
        yield bouncer.url(database_url())


@pytest.fixture
def pooled_url(pgbouncer) -> str:
    """The test database through PgBouncer."""
    return pgbouncer.url(database_url())
