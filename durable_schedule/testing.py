"""Test support for projects that use durable_schedule (and for our own suite).

``ControlledClock`` replaces the clock seam ``durable_schedule_clock`` (docs/protocol/storage.md)
with a fixed instant, as the migration owner. Protocol time then moves only when a test says so: no
sleeping, no patching of Python's ``datetime``. Inside a test transaction the replacement is rolled
back with the test; ``restore()`` puts the production body back for tests that commit.

``reset_store()`` empties the store for tests that commit (``TransactionTestCase``, pytest-django's
``transactional_db``): Django's flush between such tests truncates only managed tables, and the
store's tables are SQL-owned (``managed = False``), so Work and schedules of one test were still
there in the next.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connections

from durable_schedule import conf

__all__ = ["STORE_TABLES", "ControlledClock", "reset_store"]

_PRODUCTION_BODY = """
    SELECT CASE kind
        WHEN 'transaction' THEN pg_catalog.transaction_timestamp()
        ELSE pg_catalog.clock_timestamp()
    END
"""


class ControlledClock:
    """Set, advance and restore the database clock seam."""

    def __init__(self, using: str | None = None) -> None:
        self.using = using or conf.database_alias()
        self.now: datetime | None = None

    def _replace(self, body: str) -> None:
        with connections[self.using].cursor() as cur:
            cur.execute(
                "CREATE OR REPLACE FUNCTION durable_schedule_clock(kind text DEFAULT 'clock') "
                "RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE AS $clock$"
                + body
                + "$clock$"
            )

    def set(self, when: datetime) -> datetime:
        if when.tzinfo is None:
            raise ValueError("ControlledClock.set needs an aware datetime")
        self.now = when
        self._replace(f" SELECT '{when.isoformat()}'::timestamptz ")
        return when

    def advance(self, delta: timedelta) -> datetime:
        if self.now is None:
            raise RuntimeError("set() the clock before advancing it")
        return self.set(self.now + delta)

    def restore(self) -> None:
        self.now = None
        self._replace(_PRODUCTION_BODY)


#: Every table of the store but ``durable_schedule_store`` (its one row holds the schema version
#: and the floor). Listed, not looked up by name prefix, so a project table that happens to be
#: called ``durable_...`` is never emptied; tests/test_testing_reset_store.py compares the list
#: with the migrated catalog.
STORE_TABLES = (
    "durable_schedule_scope", "durable_schedule_definition", "durable_schedule_generation",
    "durable_schedule_occurrence", "durable_schedule_dispatch", "durable_schedule_history",
    "durable_schedule_routing", "durable_work", "durable_work_dispatch", "durable_work_permit",
    "durable_work_quarantine", "durable_work_history", "durable_work_retention_mark",
    "durable_runner_heartbeat",
)


def reset_store(using: str | None = None) -> None:
    """Empty every table of the store and put the runtime epoch back to 1, as the migration
    owner (the database user of a test database), in one statement with the store's tables
    only: no CASCADE, so a project table that references the store makes it fail instead of
    being emptied too. For tests that commit; a test inside a transaction needs nothing."""
    with connections[using or conf.database_alias()].cursor() as cur:
        cur.execute(f"TRUNCATE {', '.join(STORE_TABLES)} RESTART IDENTITY")
        cur.execute("UPDATE durable_schedule_store SET runtime_epoch = 1")
