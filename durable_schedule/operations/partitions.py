"""History partition maintenance (docs/protocol/storage.md, docs/protocol/schedules.md "Operations
and compatibility").

``ensure_schedule_history_partitions()`` creates the current and next month with forced RLS and
the exact policy. ``--loop`` runners call it once a day; an advisory transaction lock makes one
runner at a time do it, and the others skip rather than queue behind it.
"""

from __future__ import annotations

from django.db import transaction

from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection

#: Advisory lock key of partition maintenance ("DS" 0001).
PARTITION_LOCK_KEY = 0x44530001


def ensure_partitions(*, using: str | None = None, wait: bool = True) -> list[str] | None:
    """Create missing partitions; returns the new partition names, or None when another runner
    held the lock and ``wait`` is False."""
    conn = connection(using)
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        if not wait:
            cur.execute(query("operations_queries.sql", "try_partition_lock"), [PARTITION_LOCK_KEY])
            if not cur.fetchone()[0]:
                return None
        cur.execute(query("operations_queries.sql", "ensure_partitions"))
        return [r[0] for r in cur.fetchall()]
