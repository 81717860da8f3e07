"""Operator calls that provision scopes (docs/operations.md "Scopes").

* :func:`provision_scope` creates a scope explicitly. Reads never create one (docs/security.md
  "Reads never create scopes"); the first committed write into a scope creates it, and this
  call does the same for an operator who wants the scope to exist before anything is written.
* :func:`reprovision_scope` bumps a scope's generation. Every schedule of the scope then
  suspends with ``scope_generation_mismatch`` on its next pass, before its cursor moves or it
  accepts Work (the scope-generation fence of docs/schedules.md "Suspensions"): the tenant was
  re-provisioned (restored from elsewhere, handed to a new owner, its targets changed), so its
  schedules must be reviewed, not resumed blindly. The repair is ``schedules.update(...)``
  (a new generation bound to the new scope generation) or delete and create;
  ``release_after_recovery`` refuses this reason (DS110).

The bump runs as the migration owner (the runtime role may change only ``updated_at`` of a
scope row), inside a transaction that sets the scope's transaction-local setting, so the scope
table's row-level security admits exactly that row also for an owner that is neither superuser
nor BYPASSRLS.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from durable_schedule.errors import ScopeNotFound
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import (
    SCOPE_SETTING,
    connection,
    scoped,
    validate_scope_id,
)

_QUERIES = "operations_queries.sql"


@dataclass(frozen=True)
class ScopeInfo:
    scope_id: str
    routing_id: int
    generation: int


@dataclass(frozen=True)
class Reprovision:
    scope_id: str
    generation_before: int
    generation_after: int
    #: Schedules (not deleted) that will suspend on their next pass: bound to an older
    #: generation than ``generation_after``.
    fenced_schedules: tuple[str, ...]
    dry_run: bool


def provision_scope(scope_id: str, *, using: str | None = None) -> ScopeInfo:
    """Create ``scope_id`` if it does not exist (idempotent); returns its routing facts."""
    validate_scope_id(scope_id)
    with scoped(scope_id, using=using, create=True) as cur:
        cur.execute(query(_QUERIES, "scope_row"), {"scope_id": scope_id})
        routing_id, generation = cur.fetchone()
    return ScopeInfo(scope_id, int(routing_id), int(generation))


def reprovision_scope(scope_id: str, *, dry_run: bool,
                      using: str | None = None) -> Reprovision:
    """Bump the generation of an existing scope; ``ScopeNotFound`` (DS306) when it has none.

    Never creates a scope: re-provisioning a scope that was never written is a typo."""
    validate_scope_id(scope_id)
    conn = connection(using)
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        cur.execute("select coalesce(current_setting(%s, true), '')", [SCOPE_SETTING])
        previous = cur.fetchone()[0]
        cur.execute("select set_config(%s, %s, true)", [SCOPE_SETTING, scope_id])
        cur.execute(query(_QUERIES, "lock_scope_row"), {"scope_id": scope_id})
        row = cur.fetchone()
        if row is None:
            raise ScopeNotFound("no such scope: nothing was written into it", scope=scope_id)
        before = int(row[1])
        after = before + 1
        if not dry_run:
            cur.execute(query(_QUERIES, "bump_scope_generation"), {"scope_id": scope_id})
            after = int(cur.fetchone()[0])
        cur.execute(query(_QUERIES, "scope_schedules"), {"scope_id": scope_id})
        fenced = tuple(sid for sid, _state, bound in cur.fetchall() if bound < after)
        cur.execute("select set_config(%s, %s, true)", [SCOPE_SETTING, previous])
    return Reprovision(scope_id, before, after, fenced, dry_run)
