"""Reading a Work's attempts: ``work.attempts(scope, work_id) -> list[AttemptInfo]`` (issue 12
item 5, issue 15 item 3).

One query in a scoped block, like ``work.get``: every admitted permit of the Work in permit
order, the lease owner that ran it (the ``admitted`` history row's actor) and, for an attempt
that failed, the error its failure recorded -- diagnostic code, message, the exception's class
path and a bounded traceback (:mod:`.failures`). It takes no lock and reads no clock: a
descriptive projection, as every read. A tasks backend maps ``error`` to Django's
``TaskResult.errors`` and ``lease_owner`` to ``worker_ids``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import WorkNotFound
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import scoped
from durable_schedule.work import codec
from durable_schedule.work.inspection import _uuid

_QUERIES = "work_queries.sql"


@dataclass(frozen=True)
class AttemptInfo:
    """One admitted attempt (one permit) of a Work."""

    permit_no: int
    attempt: int
    lease_generation: int
    admitted_at: datetime
    #: The lease owner (worker) the attempt was admitted to.
    lease_owner: str | None
    #: The permit's resolution (``succeeded``, ``failed``, ``proven_no_effect``, ...) or None
    #: while unresolved (running, or lost without proof).
    outcome: str | None
    resolved_at: datetime | None
    resolution_source: str | None
    #: The history event that recorded this attempt's failure, or None.
    failure_event: str | None
    #: ``{"code", "message", "type", "class", "traceback", ...}`` when the attempt failed.
    error: dict[str, Any] | None

    @property
    def exception_class(self) -> str | None:
        return None if self.error is None else self.error.get("class")

    @property
    def traceback(self) -> str | None:
        return None if self.error is None else self.error.get("traceback")


@scope_optional
def attempts(scope: str, work_id: uuid.UUID | str, *,
             using: str | None = None) -> list[AttemptInfo]:
    """Every admitted attempt of one Work of ``scope``, oldest first; WorkNotFound (DS210) when
    the scope has no such Work. A Work that was never admitted has no attempts. A read: it
    writes nothing and never creates the scope (docs/security.md "Reads never create scopes")."""
    wid = _uuid(work_id, "work_id")
    with scoped(scope, using=using, create=False) as cur:
        cur.execute(query(_QUERIES, "attempts"), {"scope_id": scope, "work_id": wid})
        found = cur.fetchall()
        if not found:
            cur.execute("select 1 from durable_work where scope_id = %s and work_id = %s",
                        [scope, wid])
            if cur.fetchone() is None:
                raise WorkNotFound("no such Work in this scope", scope=scope, work_id=str(wid))
    return [AttemptInfo(permit_no=no, attempt=attempt, lease_generation=gen, admitted_at=at,
                        lease_owner=owner, outcome=outcome, resolved_at=resolved,
                        resolution_source=source, failure_event=event,
                        error=codec.loads(error))
            for (no, attempt, gen, at, outcome, resolved, source, owner, _id, event, error)
            in found]
