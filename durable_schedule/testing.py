"""Test support for projects that use durable_schedule (and for our own suite).

``ControlledClock`` replaces the clock seam ``durable_schedule_clock`` (docs/protocol/storage.md)
with a fixed instant, as the migration owner. Protocol time then moves only when a test says so: no
sleeping, no patching of Python's ``datetime``. Inside a test transaction the replacement is rolled
back with the test; ``restore()`` puts the production body back for tests that commit.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connections

from durable_schedule import conf

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
