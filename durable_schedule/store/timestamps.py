"""The ``timestamptz`` loader of the runtime's cursors (store/transactions.py ``_cursor``).

Django's psycopg backend loads every ``timestamptz`` with its ``BaseTzLoader``: psycopg's
pure-Python ``TimestamptzLoader`` (a regular expression, seven ``int()`` calls and two datetime
operations per value), then ``.replace(tzinfo=connection.timezone)``. That subclassing pins it
to the Python implementation even where psycopg's C implementation is installed, and the
batched schedule pass spent about 7 % of its client time there (four timestamps per definition
row; docs/benchmarks.md "Batched schedule passes, profiled").

The loader here gives the same value: the C ``TimestamptzLoader`` (the same algorithm, the
result in the session's time zone), then the same ``.replace(tzinfo=...)`` Django applies.
The C class cannot be subclassed, so it is wrapped. Each loader instance also remembers the
last text it loaded and its value: the rows of one answer often repeat a timestamp (every Work
created by one ``enqueue_many`` has the same ``accepted_at``), and the C loader's answer for a
text is fixed for the instance (it takes the session's time zone when it is made), so a repeat
is the same value without parsing it again. An empty text is never a timestamp, so the initial
entry never matches; the entry is one tuple, replaced whole. Without the C implementation there is
nothing to gain and :func:`loader_for` returns None (the caller keeps Django's loader).
tests/store/test_timestamp_loader.py compares the two over random instants and session zones.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import psycopg
from psycopg.adapt import Loader
from psycopg.postgres import types as pg_types
from psycopg.pq import Format

TIMESTAMPTZ_OID = pg_types["timestamptz"].oid


def native_loader() -> type | None:
    """psycopg's own text ``timestamptz`` loader when it is the C one, else None."""
    native = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    if native is None or native.__module__.startswith("psycopg."):
        return None  # the pure-Python implementation: what Django's loader already runs
    return native


@lru_cache(maxsize=16)
def loader_for(timezone: Any) -> type | None:
    """A loader class giving what Django's loader for ``timezone`` gives, faster; None when
    psycopg's C implementation is not installed."""
    native = native_loader()
    if native is None:
        return None

    class RuntimeTzLoader(Loader):
        """C ``timestamptz`` parsing, then Django's ``replace(tzinfo=timezone)``; the last
        value is remembered with its text (see the module docstring)."""

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._load = native(oid, context).load
            self._last: tuple[bytes, Any] = (b"", None)

        def load(self, data: Any) -> Any:
            last = self._last
            if data == last[0]:
                return last[1]
            value = self._load(data).replace(tzinfo=timezone)
            self._last = (bytes(data), value)
            return value

    RuntimeTzLoader.timezone = timezone  # as Django's SpecificTzLoader exposes it
    return RuntimeTzLoader
