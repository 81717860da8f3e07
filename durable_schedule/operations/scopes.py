"""Every scope of the store, found without an RLS exception.

The owner may not read the scope table (forced RLS), and the dispatch tables only know scopes
that still have something queued: a scope whose Work all finished or is suspended has no
dispatch row. Routing ids are issued by one identity sequence, which the owner may read, so
the operations walk ``1..last_value`` and resolve each id through the runtime's routing lookup
(``store.transactions.routed``); ids of rolled-back inserts resolve to nothing and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection


def last_routing_id(cur) -> int:
    cur.execute(query("operations_queries.sql", "last_routing_id"))
    return int(cur.fetchone()[0])


def routing_ids(*, using: str | None = None) -> Iterator[int]:
    with connection(using).cursor() as cur:
        last = last_routing_id(cur)
    yield from range(1, last + 1)
