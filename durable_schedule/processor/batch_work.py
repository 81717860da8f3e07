"""Work acceptance for a batch: the occurrence Work of many schedules in one statement.

``bridge.bridge()`` accepts one occurrence's Work through ``work.enqueue.accept_in_scope``;
here the same requests (built by the same ``WorkTarget.to_request`` from the same derived
identity) are written by one multi-row form of the same statement ("accept works" in
``store/sql/schedule_batch_queries.sql``, the columns and derived values of ``accept`` in
``work_queries.sql``). A row that statement did not insert conflicted with a stored Work: it is
resolved by ``accept_in_scope`` itself, which compares and returns the stored Work or raises
``IdempotencyConflict`` — the single bridge's answer, row by row.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from durable_schedule.errors import WrongRole
from durable_schedule.processor.bridge import (
    Bridged,
    OccurrenceIdentity,
    WorkLink,
    derive_link,
)
from durable_schedule.processor.bridge import _conflict as conflict
from durable_schedule.store.sqlfiles import query
from durable_schedule.work import codec
from durable_schedule.work.enqueue import WorkRequest, accept_in_scope
from durable_schedule.work.target import WorkTarget

QUERIES = "schedule_batch_queries.sql"


def run_batch(cur, name: str, params: dict[str, Any]):
    """Execute one named query of ``schedule_batch_queries.sql``; returns the cursor."""
    cur.execute(query(QUERIES, name), params)
    return cur


def request_row(request: WorkRequest, source_occurrence_id: int) -> dict[str, Any]:
    """The values ``accept_in_scope`` binds for ``request`` (work/enqueue.py), as one row."""
    fp = request.fingerprint
    plan = None if request.policy is None or request.policy.plan is None \
        else request.policy.plan
    detail = {
        "command_id": request.command_id,
        "idempotency_key": request.idempotency_key,
        "work_name": request.work_name,
        "work_version": request.work_version,
        "fingerprint_schema": fp.schema,
        "source_occurrence_id": source_occurrence_id,
    }
    return {
        "work_ids": request.work_id,
        "command_ids": request.command_id,
        "idempotency_keys": request.idempotency_key,
        "work_names": request.work_name,
        "work_versions": request.work_version,
        "payloads": codec.canonical_json(request.payload),
        "provider_safeties": request.provider_safety,
        "fingerprint_schemas": fp.schema,
        "fingerprint_digests": fp.digest,
        "retry_policies": codec.canonical_json(request.retry.to_json(), "retry_policy"),
        "attempt_plans": None if plan is None else codec.canonical_json(plan.to_json()),
        "execution_deadlines": request.deadline,
        "due_ats": request.due_at,
        "source_occurrence_ids": source_occurrence_id,
        "details": codec.canonical_json(detail, "detail"),
    }


class WorkBatch:
    """The fresh occurrences of a batch whose Work is accepted together."""

    def __init__(self, cur, scope_id: str, now: datetime) -> None:
        self.cur, self.scope_id, self.now = cur, scope_id, now
        self._pending: list[tuple[str, OccurrenceIdentity, WorkLink, WorkRequest]] = []
        # One parsed target per stored target text: schedules of one definition template
        # share it, and parsing validates the whole target each time.
        self._targets: dict[str, WorkTarget] = {}

    def __bool__(self) -> bool:
        return bool(self._pending)

    def add(self, schedule_id: str, identity: OccurrenceIdentity, target_json: Any) -> None:
        """Queue the Work of a freshly inserted (pending, unlinked) occurrence."""
        if identity.fresh_id is None:
            raise ValueError("only freshly inserted occurrences are accepted in a batch")
        derived = derive_link(identity)
        request = self._target(target_json).to_request(
            command_id=derived.command, idempotency_key=derived.idempotency_key,
            work_id=derived.work_id, accepted_base=self.now)
        self._pending.append((schedule_id, identity, derived, request))

    def _target(self, target_json: Any) -> WorkTarget:
        key = codec.canonical_json(target_json)
        target = self._targets.get(key)
        if target is None:
            target = self._targets[key] = WorkTarget.from_json(target_json)
        return target

    def accept(self) -> dict[str, Bridged]:
        """Accept every queued Work in one statement; ``{schedule_id: Bridged}`` with the link
        left to the caller's closing statement (``Bridged.link_row``)."""
        rows = [request_row(r, i.fresh_id) for _s, i, _d, r in self._pending]
        params: dict[str, Any] = {"scope_id": self.scope_id}
        for name in rows[0]:
            params[name] = [row[name] for row in rows]
        got = run_batch(self.cur, "accept_works", params).fetchall()
        if not got or not got[0][0]:
            raise WrongRole("accept_in_scope needs a cursor inside a scoped runtime transaction "
                            "for this scope", scope=self.scope_id)
        inserted = {_as_uuid(row[1]) for row in got if row[1] is not None}
        out: dict[str, Bridged] = {}
        for schedule_id, identity, derived, request in self._pending:
            if derived.work_id in inserted:
                out[schedule_id] = Bridged(derived, created=True, link_row=identity.fresh_id)
                continue
            # Not inserted: a stored Work holds this identity. The single bridge's answer.
            accepted = accept_in_scope(self.cur, self.scope_id, request,
                                       source_occurrence_id=identity.fresh_id)
            link = WorkLink(_as_uuid(accepted.work_id), accepted.command_id,
                            accepted.idempotency_key)
            if link != derived:
                raise conflict(identity, derived, link.as_dict(),
                               "the Work runtime returned a different Work identity")
            out[schedule_id] = Bridged(derived, created=bool(accepted.created),
                                       link_row=identity.fresh_id)
        return out


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
