"""Public reads of a schedule's past (docs/api.md, docs/schedules.md "Reading occurrences and
produced Work"): its occurrences, and the Work they produced.

Each call is one statement in the scoped read form (no scope row is ever created, no lock, no
clock: a descriptive snapshot, like ``work.list``), paged by keyset on the occurrence id:

* ``occurrences(scope, schedule_id, after=0, limit=100)`` oldest first; pass the last item's
  ``id`` as ``after`` for the next page. ``newest_first=True`` pages backwards with ``before``.
* ``produced_work(scope, schedule_id, after=0, limit=100)`` the accepted Work in occurrence
  order; pass the last item's ``source_occurrence_id`` as ``after``.

Both raise ``ScheduleNotFound`` (DS108) when the scope has no such schedule (deleted schedules
are still read), and return ``[]`` when it has nothing (yet) on that page.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import InvalidArgument, ScheduleNotFound
from durable_schedule.schedules import validation as check
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import scoped, validate_scope_id
from durable_schedule.work.inspection import WorkInfo, _info

_QUERIES = "occurrence_queries.sql"
MAX_PAGE = 500
#: Larger than any bigint id: "before the newest".
_NEWEST = 2**63 - 1


@dataclass(frozen=True)
class OccurrenceInfo:
    """One occurrence of a schedule as stored.

    ``kind`` is ``nominal`` (one instant), ``recovery`` or ``coalesced`` (a range
    ``first_nominal_utc`` .. ``last_nominal_utc``); ``generation`` is the schedule generation it
    belongs to; ``work_id`` the Work it was materialized as (None while it has none).
    """

    id: int
    scope: str
    schedule_id: str
    generation: int
    kind: str
    first_nominal_utc: datetime
    last_nominal_utc: datetime
    state: str
    work_id: uuid.UUID | None
    created_at: datetime
    updated_at: datetime


def _page(limit: object) -> int:
    if type(limit) is not int or not 1 <= limit <= MAX_PAGE:
        raise InvalidArgument(f"limit must be an integer between 1 and {MAX_PAGE}",
                              field="limit", got=repr(limit)[:80])
    return limit


def _key(value: object, field: str) -> int:
    if type(value) is not int or value < 0:
        raise InvalidArgument(f"{field} must be an occurrence id (an int >= 0)", field=field,
                              got=repr(value)[:80])
    return value


def _read(scope: str, schedule_id: str, name: str, params: dict) -> list[tuple]:
    with scoped(scope, create=False) as cur:
        cur.execute(query(_QUERIES, name),
                    {"scope_id": scope, "schedule_id": schedule_id, **params})
        rows = cur.fetchall()
    if not rows:
        raise ScheduleNotFound("no such schedule in this scope", schedule_id=schedule_id)
    return [r for r in rows if r[0] is not None]  # one row of NULLs: the schedule has none


@scope_optional
def occurrences(scope: str, schedule_id: str, *, after: int = 0, before: int | None = None,
                limit: int = 100, newest_first: bool = False) -> list[OccurrenceInfo]:
    """A page of ``schedule_id``'s occurrences (one query)."""
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    limit = _page(limit)
    if type(newest_first) is not bool:
        # Read as its truthiness, newest_first="no" would page backwards.
        raise InvalidArgument("newest_first must be True or False", field="newest_first",
                              got=repr(newest_first)[:80])
    if newest_first:
        if after != 0:
            raise InvalidArgument("newest_first pages with before=, not after=", field="after")
        key = _NEWEST if before is None else _key(before, "before")
        rows = _read(scope, schedule_id, "occurrences_newest_first",
                     {"before": key, "limit": limit})
    else:
        if before is not None:
            raise InvalidArgument("before= needs newest_first=True", field="before")
        rows = _read(scope, schedule_id, "occurrences_oldest_first",
                     {"after": _key(after, "after"), "limit": limit})
    return [OccurrenceInfo(id=r[0], scope=scope, schedule_id=schedule_id, generation=r[1],
                           kind=r[2], first_nominal_utc=r[3], last_nominal_utc=r[4], state=r[5],
                           work_id=r[6], created_at=r[7], updated_at=r[8]) for r in rows]


@scope_optional
def produced_work(scope: str, schedule_id: str, *, after: int = 0,
                  limit: int = 100) -> list[WorkInfo]:
    """A page of the Work ``schedule_id`` produced, in occurrence order (one query)."""
    validate_scope_id(scope)
    schedule_id = check.schedule_id(schedule_id)
    rows = _read(scope, schedule_id, "produced_work",
                 {"after": _key(after, "after"), "limit": _page(limit)})
    return [_info(r) for r in rows]
