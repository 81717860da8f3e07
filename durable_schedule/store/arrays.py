"""Array parameters sent in PostgreSQL's binary format (the Work pipeline's set statements).

psycopg sends a Python list in the text format unless told otherwise, and a text array literal
of strings is built with a regular-expression escape per element: ten history details of one
batch cost about 115 microseconds to dump, against 4 in the binary format (measured,
docs/benchmarks.md "Bottlenecks"). :class:`BinaryArray` marks a list for the binary dumper
without changing the SQL: the preparing cursor of :mod:`.transactions` registers the binary list
dumper for it on its connection, so ``%(name)s`` (psycopg's automatic format) picks it there.
Any other cursor (``PREPARE_STATEMENTS`` off, Django's client-side binding) finds no such
registration and dumps it as the plain list it is, in text: same values, same statements.
"""

from __future__ import annotations

from psycopg.types.array import ListBinaryDumper

_REGISTERED = "_durable_schedule_binary_arrays"


class BinaryArray(list):
    """A list parameter to be sent as a binary array where the cursor allows it."""

    __slots__ = ()


def register(pg_connection) -> None:
    """Let ``%s`` dump :class:`BinaryArray` in the binary format on this psycopg connection
    (once per connection: psycopg copies its adapters map on the first registration)."""
    if not getattr(pg_connection, _REGISTERED, False):
        pg_connection.adapters.register_dumper(BinaryArray, ListBinaryDumper)
        setattr(pg_connection, _REGISTERED, True)
