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

import json
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


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} has no JSON form here")


def rows_json(rows: list[dict[str, Any]]) -> str:
    """The rows of a multi-row statement as one jsonb parameter (see the query file): instants
    as ISO-8601 text with their offset, uuids as text, JSON values (payloads, details) nested as
    they are, so the column's jsonb is the same value its canonical text would give."""
    return json.dumps(rows, ensure_ascii=False, allow_nan=False, default=_plain)


class _Template:
    """What every Work request built from one target in one batch shares: the target's
    validated request and the values ``accept_in_scope`` would bind for it. Only the identity
    (work id, command, idempotency key) differs between its occurrences, and the fingerprint
    does not cover it, so one template request stands for all of them."""

    def __init__(self, target: WorkTarget, now: datetime) -> None:
        self.target, self.now = target, now
        probe = target.to_request(command_id="probe", idempotency_key="probe",
                                  work_id=uuid.uuid4(), accepted_base=now)
        fp = probe.fingerprint
        plan = None if probe.policy is None or probe.policy.plan is None else probe.policy.plan
        self.work_name, self.work_version = probe.work_name, probe.work_version
        self.fingerprint_schema = fp.schema
        self.row = {
            "work_name": probe.work_name,
            "work_version": probe.work_version,
            "payload": json.loads(codec.canonical_json(probe.payload)),
            "provider_safety": probe.provider_safety,
            "fingerprint_schema": fp.schema,
            "fingerprint_digest": fp.digest,
            "retry_policy": json.loads(codec.canonical_json(probe.retry.to_json(),
                                                            "retry_policy")),
            "attempt_plan": None if plan is None else json.loads(
                codec.canonical_json(plan.to_json())),
            "execution_deadline": probe.deadline,
            "due_at": probe.due_at,
        }

    def request(self, derived: WorkLink) -> WorkRequest:
        """The full request of one occurrence (for the rare compare-or-return)."""
        return self.target.to_request(
            command_id=derived.command, idempotency_key=derived.idempotency_key,
            work_id=derived.work_id, accepted_base=self.now)

    def row_for(self, n: int, derived: WorkLink, source_occurrence_id: int) -> dict[str, Any]:
        """The values ``accept_in_scope`` binds for this occurrence's request (work/enqueue.py),
        as one row of "accept works"."""
        return {
            **self.row, "n": n, "work_id": derived.work_id, "command_id": derived.command,
            "idempotency_key": derived.idempotency_key,
            "source_occurrence_id": source_occurrence_id,
            "detail": {
                "command_id": derived.command,
                "idempotency_key": derived.idempotency_key,
                "work_name": self.work_name,
                "work_version": self.work_version,
                "fingerprint_schema": self.fingerprint_schema,
                "source_occurrence_id": source_occurrence_id,
            },
        }


class WorkBatch:
    """The fresh occurrences of a batch whose Work is accepted together."""

    def __init__(self, cur, scope_id: str, now: datetime) -> None:
        self.cur, self.scope_id, self.now = cur, scope_id, now
        self._pending: list[tuple[str, OccurrenceIdentity, WorkLink, _Template]] = []
        # One template per stored target text: the schedules of one target share it, and
        # parsing and validating a target is most of the Python work of an acceptance.
        self._templates: dict[str, _Template] = {}

    def __bool__(self) -> bool:
        return bool(self._pending)

    def add(self, schedule_id: str, identity: OccurrenceIdentity, target_json: Any) -> None:
        """Queue the Work of a freshly inserted (pending, unlinked) occurrence."""
        if identity.fresh_id is None:
            raise ValueError("only freshly inserted occurrences are accepted in a batch")
        key = json.dumps(target_json, sort_keys=True, separators=(",", ":"))
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = _Template(WorkTarget.from_json(target_json),
                                                        self.now)
        self._pending.append((schedule_id, identity, derive_link(identity), template))

    def accept(self) -> dict[str, Bridged]:
        """Accept every queued Work in one statement; ``{schedule_id: Bridged}`` with the link
        left to the caller's closing statement (``Bridged.link_row``)."""
        rows = [t.row_for(n, d, i.fresh_id) for n, (_s, i, d, t) in enumerate(self._pending)]
        got = run_batch(self.cur, "accept_works",
                        {"scope_id": self.scope_id, "rows": rows_json(rows)}).fetchall()
        if not got or not got[0][0]:
            raise WrongRole("accept_in_scope needs a cursor inside a scoped runtime transaction "
                            "for this scope", scope=self.scope_id)
        inserted = {_as_uuid(row[1]) for row in got if row[1] is not None}
        out: dict[str, Bridged] = {}
        for schedule_id, identity, derived, template in self._pending:
            if derived.work_id in inserted:
                out[schedule_id] = Bridged(derived, created=True, link_row=identity.fresh_id)
                continue
            # Not inserted: a stored Work holds this identity. The single bridge's answer.
            accepted = accept_in_scope(self.cur, self.scope_id, template.request(derived),
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
