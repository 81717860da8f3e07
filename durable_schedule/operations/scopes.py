"""Every scope of the store, found without an RLS exception.

The owner may not read the scope table (forced RLS), and the dispatch tables only know scopes
that still have something queued: a scope whose Work all finished or is suspended has no
dispatch row. So every new scope registers its routing id in the payload-free table
``durable_schedule_routing`` (a trigger, store/sql/0006_operations_health.sql), which the owner
reads; each id is then resolved through the runtime's routing lookup
(``store.transactions.routed``), one scope per short transaction.
"""

from __future__ import annotations

from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection


def routing_ids(cur=None, *, using: str | None = None) -> list[int]:
    """Every registered routing id, ascending (``cur``: an owner cursor already open)."""
    if cur is None:
        with connection(using).cursor() as own:
            return routing_ids(own)
    cur.execute(query("operations_queries.sql", "routing_ids"))
    return [r[0] for r in cur.fetchall()]
