"""The Work bridge for a batch: new occurrences of many schedules and their Work in one
statement.

``bridge.bridge()`` inserts one occurrence pending, accepts its Work through
``work.enqueue.accept_in_scope`` and then writes the link. The link is a pure function of the
occurrence identity (``derive_link``), so here each new occurrence is inserted already linked
and its Work — the same request, built by the same ``WorkTarget.to_request`` from the same
derived identity, with the columns and values of ``accept`` in ``work_queries.sql`` — is
accepted by the same statement ("bridge occurrences" in
``store/sql/schedule_batch_queries.sql``). Nothing outside the transaction can tell the two
apart: a pending, unlinked nominal occurrence is never committed either way. The statement
only succeeds when every occurrence and every Work of the batch is new: an identity or a Work
key a stored row holds already is a unique violation, the batch rolls back, and each of its
schedules runs the single bridge alone, which compares and returns the stored rows or raises
``IdempotencyConflict`` / ``OccurrenceLinkConflict`` — the single bridge's answer, row by row.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from durable_schedule.processor.bridge import (
    Bridged,
    OccurrenceIdentity,
    WorkLink,
    derive_link,
    make_bridged,
)
from durable_schedule.store.sqlfiles import query
from durable_schedule.work import codec
from durable_schedule.work.target import WorkTarget

QUERIES = "schedule_batch_queries.sql"

#: The most canonical-JSON payload bytes the Work templates of one batch carry (docs/schedules.md
#: "The processor"). Every template travels in one jsonb parameter, and PostgreSQL refuses a
#: jsonb array over 256 MiB (SQLSTATE 54000): a batch of schedules with large, distinct, each
#: legal payloads (up to 32 MiB) would roll back on every pass before its schedules ran alone.
#: Past this budget a new template's schedule is left out of the batch and processed alone
#: after its commit; a batch always takes its first template, whatever its size.
TEMPLATE_BYTES_BUDGET = 128 * 1024 * 1024


def batch_statement(name: str) -> str:
    """The text of one named query of ``schedule_batch_queries.sql`` (to send it in a
    pipeline)."""
    return query(QUERIES, name)


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


#: check_circular off: the rows are trees the batch builds (no value holds itself), and the
#: encoder's bookkeeping of every container it enters was an eighth of its time. The text is
#: the same (tests/schedules/test_batch_encoding.py).
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False,
                            default=_plain)


def rows_json(rows: list[dict[str, Any]]) -> str:
    """The rows of a multi-row statement as one jsonb parameter (see the query file): instants
    as ISO-8601 text with their offset, uuids as text, JSON values (payloads, details) nested as
    they are, so the column's jsonb is the same value its canonical text would give. The rows'
    builders pass the instants of timestamptz columns as text already (:class:`InstantText`):
    a ``default`` call per value cost more than the encoding of the rest of the row."""
    return _ENCODER.encode(rows)


class InstantText:
    """ISO-8601 text of the instants one batch sends in ``timestamptz`` columns, each distinct
    instant formatted once (a batch's schedules share most of their instants: the cursor they
    leave, the next due time). Keyed by value (and, outside UTC, by offset too: equal datetimes
    of one zone may differ in fold, an hour apart): equal instants are read by the column's
    input function as the same value whichever of their texts is sent. Never for JSON values
    that are stored as text (history details format their own instants)."""

    __slots__ = ("_texts",)

    def __init__(self) -> None:
        self._texts: dict[object, str] = {}

    def __call__(self, value: datetime | None) -> str | None:
        if value is None:
            return None
        # Outside UTC, two datetimes of one zone that differ only in fold (the repeated hour)
        # compare and hash equal but are an hour apart: the offset is part of their key.
        key = value if value.tzinfo is UTC else (value, value.utcoffset())
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = value.isoformat()  # as _plain would write it
        return text


class _Template:
    """What every Work request built from one target in one batch shares: the target's
    validated request and the values ``accept_in_scope`` would bind for it. Only the identity
    (work id, command, idempotency key) differs between its occurrences, and the fingerprint
    does not cover it, so one template request stands for all of them, and is sent once per
    batch (``number``: its position in the statement's "templates")."""

    def __init__(self, target: WorkTarget, now: datetime, number: int) -> None:
        self.number = number
        probe = target.to_request(command_id="probe", idempotency_key="probe",
                                  work_id=uuid.uuid4(), accepted_base=now)
        fp = probe.fingerprint
        payload_text = codec.canonical_json(probe.payload)
        #: The payload's canonical JSON length (what it adds to the batch's templates).
        self.size = len(payload_text)
        plan = None if probe.policy is None or probe.policy.plan is None else probe.policy.plan
        # One row of "templates" in "bridge occurrences": the values accept_in_scope binds
        # for every request of this target (work/enqueue.py); the statement builds each
        # occurrence's accepted history detail from them and the row's identity.
        self.row = {
            "t": number,
            "work_name": probe.work_name,
            "work_version": probe.work_version,
            "payload": json.loads(payload_text),
            "provider_safety": probe.provider_safety,
            "fingerprint_schema": fp.schema,
            "fingerprint_digest": fp.digest,
            "retry_policy": json.loads(codec.canonical_json(probe.retry.to_json(),
                                                            "retry_policy")),
            "attempt_plan": None if plan is None else json.loads(
                codec.canonical_json(plan.to_json())),
            "execution_deadline": probe.deadline,
            "due_at": probe.due_at,
            # Routing facts (the target's queue and priority); the dispatch row's copy of them
            # is the routing trigger's, as for every accepted Work.
            "queue_name": probe.queue,
            "priority": probe.priority,
        }


class BatchAbandoned(Exception):  # noqa: N818 - an internal signal, never leaves the processor
    """A multi-row write matched other rows than its guards allow: the batch rolls back and
    the caller runs its schedules one by one, where the failing one reports its own error."""


class WorkBatch:
    """The new nominal and recovery occurrences of a batch, bridged to Work together."""

    def __init__(self, cur, scope_id: str, now: datetime,
                 instant_text: InstantText | None = None) -> None:
        self.cur, self.scope_id, self.now = cur, scope_id, now
        self.instant_text = InstantText() if instant_text is None else instant_text
        self._pending: list[tuple[str, OccurrenceIdentity, datetime, WorkLink, _Template]] = []
        # One template per stored target text: the schedules of one target share it, and
        # parsing and validating a target is most of the Python work of an acceptance.
        self._templates: dict[str, _Template] = {}
        self._derived: dict[str, WorkLink] = {}
        self._template_bytes = 0

    def __bool__(self) -> bool:
        return bool(self._pending)

    def add(self, schedule_id: str, identity: OccurrenceIdentity, last: datetime,
            target_json: Any, *, key: str | None = None) -> bool:
        """Queue a new occurrence ``identity`` (range up to ``last``) and its Work. ``key``:
        the stored target's text when the caller has it (jsonb output: equal targets, equal
        text), else the target's canonical JSON. False (nothing queued) when the target's
        template would take the batch's templates past ``TEMPLATE_BYTES_BUDGET``: the caller
        leaves that schedule to be processed alone."""
        if key is None:
            key = json.dumps(target_json, sort_keys=True, separators=(",", ":"))
        template = self._templates.get(key)
        if template is None:
            template = _Template(WorkTarget.from_json(target_json), self.now,
                                 len(self._templates))
            if self._templates and self._template_bytes + template.size > \
                    TEMPLATE_BYTES_BUDGET:
                return False
            self._templates[key] = template
            self._template_bytes += template.size
        derived = self._derived[schedule_id] = derive_link(identity)
        self._pending.append((schedule_id, identity, last, derived, template))
        return True

    def bridge(self) -> dict[str, tuple[int, Bridged]]:
        """Insert every queued occurrence linked to its derived Work and accept that Work, in
        one statement. Returns ``{schedule_id: (occurrence id, Bridged)}``, every queued
        occurrence in it (see :meth:`resolve`)."""
        return self.resolve(self.send().fetchall())

    def derived(self, schedule_id: str) -> WorkLink:
        """The derived Work identity of a queued occurrence."""
        return self._derived[schedule_id]

    def send(self):
        """Execute "bridge occurrences" for the queued occurrences; returns the cursor (in a
        pipeline the result is fetched later, see ``batch._Batch._write``)."""
        rows = []
        text = self.instant_text
        for n, (schedule_id, identity, last, derived, template) in enumerate(self._pending):
            # first: the identity's own microsecond UTC text (derive_link formatted it already).
            rows.append({"n": n, "t": template.number, "schedule_id": schedule_id,
                         "generation": identity.generation, "kind": identity.kind,
                         "first": identity.first_iso, "last": text(last),
                         "work_id": derived.work_id_str(), "command_id": derived.command,
                         "idempotency_key": derived.idempotency_key})
        return run_batch(self.cur, "bridge_occurrences", {
            "scope_id": self.scope_id, "now": self.now, "rows": rows_json(rows),
            "templates": rows_json([t.row for t in self._templates.values()])})

    def all_created(self, got: list[tuple]) -> bool:
        """Did "bridge occurrences" (its rows ``got``) insert every queued occurrence and its
        Work, as the runtime in scope? (False only when the guard refused: a row it could not
        insert is a unique violation, raised by the statement itself.)"""
        if not got or not got[0][0]:
            return False
        created = {row[1] for row in got if row[1] is not None and row[3]}
        return len(created) == len(self._pending) and \
            all(p[0] in created for p in self._pending)

    def resolve(self, got: list[tuple]) -> dict[str, tuple[int, Bridged]]:
        """The result of :meth:`send`, as :meth:`bridge` returns it: every occurrence and its
        Work created. Anything else abandons the batch (its schedules then run alone, where the
        single bridge gives the precise answer): not the runtime in scope (the guard inserted
        nothing), or a row missing from the result. A stored occurrence or Work key does not
        get here: the statement's plain inserts raise a unique violation for it."""
        if not self.all_created(got):
            raise BatchAbandoned("an occurrence or its Work was not inserted (or the bridge ran "
                                 "outside the runtime's scope): the schedules run alone")
        occurrence_ids = {row[1]: int(row[2]) for row in got}
        return {schedule_id: (occurrence_ids[schedule_id], make_bridged(derived, True, None))
                for schedule_id, _identity, _last, derived, _template in self._pending}
