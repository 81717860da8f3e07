"""The acceptance statement: 1..n enqueue requests in one round trip (docs/work.md, "Accepting").

Every new Work is written by one SQL function, ``durable_schedule_accept_work`` (store/sql/
0008_acceptance.sql), called once per ``enqueue`` or ``enqueue_many``: it enters the runtime
role and the scope, inserts Work + dispatch row + ``accepted`` history row for every new item
(the dispatch insert's trigger sends the wake-up NOTIFY), compares every other item with the row
that holds its identity, and restores the caller's role and scope. Python prepares the items
(validation and fingerprints happen in :class:`~durable_schedule.work.enqueue.WorkRequest`,
before anything is sent) and turns the per-item statuses into results or errors.

Before the statement, the items of one call are checked against each other: the same identity
twice with the same facts is sent once (both positions get the same result), with different
facts it is an ``IdempotencyConflict`` (DS207), and so is one explicit work id under two
identities. Nothing is written in either case.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.db import DatabaseError

from durable_schedule.errors import (
    IdempotencyConflict,
    InvalidArgument,
    SchemaBelowFloor,
    WorkFactsTampered,
    WrongRole,
    alias_of,
)
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.version import REQUIRED_SCHEMA

_QUERIES = "acceptance_queries.sql"
#: An ``enqueue_many`` call carries at most this many requests: one statement, one jsonb
#: parameter; a bigger import is several calls (each all-or-nothing).
MAX_BATCH = 1000


@dataclass(frozen=True)
class AcceptedWork:
    """The accepted Work: its identity, current state and acceptance instant."""

    work_id: uuid.UUID
    command_id: str
    idempotency_key: str
    state: str
    accepted_at: datetime
    created: bool


_new_object = object.__new__
if tuple(f.name for f in fields(AcceptedWork)) != (
        "work_id", "command_id", "idempotency_key", "state", "accepted_at",
        "created"):  # pragma: no cover - an AcceptedWork edit
    raise RuntimeError("_accepted must fill every AcceptedWork field")


def _accepted(work_id, command_id, idempotency_key, state, accepted_at, created) -> AcceptedWork:
    """``AcceptedWork(...)`` for one result row: the fields go into the frozen instance's
    ``__dict__`` (it has no ``__post_init__``), without the generated ``__init__``'s six
    ``object.__setattr__`` calls. The same instance (tests/work/test_request_fast.py)."""
    result = _new_object(AcceptedWork)
    result.__dict__.update(work_id=work_id, command_id=command_id,
                           idempotency_key=idempotency_key, state=state,
                           accepted_at=accepted_at, created=created)
    return result


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _item(position: int, request, source_occurrence_id: int | None) -> dict[str, Any]:
    """One item of the parameter as a dict: the reference form :func:`_parameter` encodes
    (tests/work/test_acceptance_parameter.py decodes both and compares)."""
    fp = request.fingerprint
    plan = None if request.policy is None else request.policy.plan
    return {
        "item": position,
        "work_id": str(request.work_id or uuid.uuid4()),
        "explicit": request.work_id is not None,
        "command_id": request.command_id,
        "idempotency_key": request.idempotency_key,
        "work_name": request.work_name,
        "work_version": request.work_version,
        "payload": request.payload,
        "provider_safety": request.provider_safety,
        "fingerprint_schema": fp.schema,
        "fingerprint_digest": fp.digest,
        "retry_policy": request.retry_json,
        "attempt_plan": None if plan is None else plan.to_json(),
        "execution_deadline": _iso(request.deadline),
        "due_at": _iso(request.due_at),
        "source_occurrence_id": source_occurrence_id,
        "queue_name": request.queue,
        "priority": request.priority,
    }


_string = json.encoder.encode_basestring  # a JSON string literal, as json.dumps(ensure_ascii=False)


def _shared(request, fp) -> str:
    """The members of an item that requests of one definition share (names, policy, timing,
    routing), as JSON object members without braces."""
    plan = None if request.policy is None else request.policy.plan
    return json.dumps({
        "work_name": request.work_name,
        "work_version": request.work_version,
        "provider_safety": request.provider_safety,
        "fingerprint_schema": fp.schema,
        "retry_policy": request.retry_json,
        "attempt_plan": None if plan is None else plan.to_json(),
        "execution_deadline": _iso(request.deadline),
        "due_at": _iso(request.due_at),
        "queue_name": request.queue,
        "priority": request.priority,
    }, ensure_ascii=False, separators=(",", ":"))[1:-1]


#: The shared members already encoded, across calls (a definition's requests repeat them):
#: keyed by every input of :func:`_shared` -- the timing facts by their ISO text, so two equal
#: instants written in different offsets never share an entry -- bounded, cleared when full.
_SHARED: dict[tuple, str] = {}
_SHARED_MAX = 256


def _shared_members(request, fp) -> str:
    """:func:`_shared`, remembered for its key (an unhashable policy is encoded each time)."""
    key = (request.work_name, request.work_version, request.provider_safety, fp.schema,
           type(request.policy), request.policy, _iso(request.deadline), _iso(request.due_at),
           request.queue, type(request.priority), request.priority)
    try:
        common = _SHARED.get(key)
    except TypeError:  # an unhashable policy: encode its members for this item alone
        return _shared(request, fp)
    if common is None:
        common = _shared(request, fp)
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        _SHARED[key] = common
    return common


def _random_ids(count: int) -> list[str]:
    """``count`` random (version 4, RFC 4122 variant) UUIDs in their canonical text form, as
    ``str(uuid.uuid4())`` gives them, from one ``os.urandom`` call."""
    raw = bytearray(os.urandom(16 * count))
    out = []
    for start in range(0, 16 * count, 16):
        raw[start + 6] = raw[start + 6] & 0x0F | 0x40
        raw[start + 8] = raw[start + 8] & 0x3F | 0x80
        h = raw[start:start + 16].hex()
        out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


def _parameter(items: list) -> str:
    """The jsonb parameter of the acceptance statement: the members of :func:`_item`, with the
    shared members encoded once per distinct set (:func:`_shared_members`) and the payload's
    canonical text (already made by the request) embedded as it is.

    One item: an array of that complete item. Several: the object form of schema 15
    (store/sql/0016_cheaper_routing.sql), ``{"shared": [...], "items": [...]}``, each distinct
    set of shared members sent once in ``shared`` and named by its position in each item's
    ``shared`` member."""
    out = []
    fresh = _random_ids(sum(1 for request, _ in items if request.work_id is None))
    single = len(items) == 1
    sets: dict[str, int] = {}
    last = last_fp = None
    last_common = ""
    for position, (request, source_id) in enumerate(items):
        fp = request.fingerprint
        if (last is not None and request.work_name is last.work_name
                and request.work_version is last.work_version
                and request.provider_safety is last.provider_safety
                and fp.schema is last_fp.schema and request.policy is last.policy
                and request.deadline is last.deadline and request.due_at is last.due_at
                and request.queue is last.queue and request.priority is last.priority):
            # the very objects the previous item's shared members were made from (requests
            # of one definition in a row): the same members, the same set
            common = last_common
        else:
            common = _shared_members(request, fp)
            if not single:
                index = sets.get(common)
                if index is None:
                    index = sets[common] = len(sets)
                common = f'"shared":{index}'
            last, last_fp, last_common = request, fp, common
        explicit = request.work_id is not None
        out.append(
            f'{{"item":{position},"work_id":"{str(request.work_id) if explicit else fresh.pop()}",'
            f'"explicit":{"true" if explicit else "false"},'
            f'"command_id":{_string(request.command_id)},'
            f'"idempotency_key":{_string(request.idempotency_key)},'
            f'"payload":{request.__dict__["_payload_text"]},'
            f'"fingerprint_digest":"{fp.digest}",'
            f'"source_occurrence_id":{"null" if source_id is None else int(source_id)},'
            f'{common}}}')
    if single:
        return "[" + out[0] + "]"
    shared = ",".join("{" + members + "}" for members in sets)
    return '{"shared":[' + shared + '],"items":[' + ",".join(out) + "]}"


def _source_id(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidArgument("source_occurrence_id must be an int or None")
    return value


def _unique(scope_id: str, requests: Sequence, source_ids: Sequence) -> tuple[list, list[int]]:
    """The distinct requests to send, and for each input position the index of its item."""
    by_identity: dict[tuple[str, str], int] = {}
    by_work_id: dict[uuid.UUID, tuple[str, str]] = {}
    items: list[tuple[Any, int | None]] = []
    slot: list[int] = []
    for position, (request, source_id) in enumerate(zip(requests, source_ids, strict=True)):
        identity = (request.command_id, request.idempotency_key)
        if request.work_id is not None:
            holder = by_work_id.setdefault(request.work_id, identity)
            if holder != identity:
                raise IdempotencyConflict(
                    "one work id is named by two requests with different identities",
                    scope=scope_id, work_id=str(request.work_id), item=position)
        seen = by_identity.get(identity)
        if seen is None:
            by_identity[identity] = len(items)
            slot.append(len(items))
            items.append((request, source_id))
            continue
        earlier, _ = items[seen]
        if earlier.fingerprint != request.fingerprint or (
                earlier.work_id is not None and request.work_id is not None
                and earlier.work_id != request.work_id):
            raise IdempotencyConflict(
                "the same command and idempotency key appear twice with different facts",
                scope=scope_id, command_id=identity[0], idempotency_key=identity[1],
                item=position)
        if earlier.work_id is None and request.work_id is not None:
            items[seen] = (request, source_id)  # the explicit work id is the one to honour
        slot.append(seen)
    return items, slot


@dataclass
class Sent:
    """The answer of one acceptance statement, turned into results by :meth:`results`
    (outside the caller's atomic block: a refusal must not mark it for rollback)."""

    scope_id: str
    requests: list
    items: list
    slot: list[int]
    rows: list[tuple]

    def results(self) -> list[AcceptedWork]:
        """One result per request, in order; raises the refusal of the first refused item."""
        rows = self.rows
        if rows and rows[0][1] == "not_scoped":
            raise WrongRole("accepting Work needs a cursor inside a scoped runtime transaction "
                            "for this scope", scope=self.scope_id)
        refused = [row for row in rows if row[1] not in ("created", "duplicate", "rolled_back")]
        if refused:
            first = refused[0]
            # Every position of the caller's list holding a refused item (one identity may
            # appear several times in a call), in list order.
            status = {r[0]: r[1] for r in refused}
            raise _refusal(self.scope_id, self.items[first[0]][0], first, len(self.requests),
                           [(position, status[item]) for position, item in enumerate(self.slot)
                            if item in status])
        by_item = {row[0]: row for row in rows}
        out = []
        # The same identity twice in one call is one Work: only its first position created
        # it, a later one is a duplicate of it. Items are numbered in order of first
        # appearance, so a position is the first of its item when it holds the next number.
        fresh = 0
        for position, request in enumerate(self.requests):
            item = self.slot[position]
            _, status, work_id, state, accepted_at, _facts = by_item[item]
            first = item == fresh
            fresh += first
            out.append(_accepted(work_id, request.command_id, request.idempotency_key,
                                 state, accepted_at, first and status == "created"))
        return out


@dataclass
class Prepared:
    """Validated, de-duplicated requests and the statement's parameter, ready to send. Built
    before any cursor is opened, so a refusal here touches no transaction."""

    scope_id: str
    requests: list
    items: list
    slot: list[int]
    parameter: str

    def send(self, cur, *, enter: bool) -> Sent:
        """Run the acceptance statement on ``cur`` (see the module docstring).

        ``enter=True``: the statement enters role and scope itself (``enqueue``);
        ``enter=False``: ``cur`` must already be inside a scoped runtime transaction for the
        scope (the bridge), else the results raise WrongRole (DS302).
        """
        try:
            cur.execute(query(_QUERIES, "accept"), [self.scope_id, self.parameter, enter])
        except DatabaseError as exc:
            if "DS302" in str(exc):
                raise WrongRole(str(exc).split("\n")[0], scope=self.scope_id) from exc
            if _store_predates_object_form(exc, self.parameter):
                raise SchemaBelowFloor(
                    "the store's acceptance function predates schema 15 and does not take "
                    "several requests in this code's form; this code requires schema "
                    f"{REQUIRED_SCHEMA}", scope=self.scope_id, using=alias_of(cur)) from exc
            raise
        return Sent(self.scope_id, self.requests, self.items, self.slot, cur.fetchall())


def _store_predates_object_form(exc: DatabaseError, parameter: str) -> bool:
    """Whether ``exc`` is a store below schema 15 refusing the object form of several
    requests (:func:`_parameter`). The Work runtime checks the schema floor before every claim
    (DS401), but acceptance does not spend a round trip on it: code deployed before
    ``migrate`` would otherwise meet this as a bare DataError from the released schema-9
    function, whose ``jsonb_array_length`` cannot read an object. Only that exact refusal of an
    object parameter is translated; a single request (an array) works on the older store."""
    return (parameter.startswith("{")
            and "cannot get array length of a non-array" in str(exc)
            and "durable_schedule_accept" in str(exc))


def prepare(scope_id: str, requests: Sequence, source_ids: Sequence | None = None) -> Prepared:
    """Check the requests of one call against each other and encode them (no database)."""
    requests = list(requests)
    if not requests:
        raise InvalidArgument("enqueue_many needs at least one request")
    if len(requests) > MAX_BATCH:
        raise InvalidArgument(f"enqueue_many takes at most {MAX_BATCH} requests per call",
                              got=len(requests))
    source_ids = [None] * len(requests) if source_ids is None else list(source_ids)
    for value in source_ids:
        _source_id(value)
    items, slot = _unique(scope_id, requests, source_ids)
    parameter = _parameter(items)
    return Prepared(scope_id, requests, items, slot, parameter)


def _refusal(scope_id: str, request, row, total: int, refused: list[tuple[int, str]]):
    _, status, work_id, _state, _accepted_at, facts = row
    context: dict[str, Any] = {"scope": scope_id, "command_id": request.command_id,
                               "idempotency_key": request.idempotency_key}
    if total > 1:
        context["refused_items"] = refused
    tail = "" if total == 1 else f" (nothing of the {total} requests was written)"
    if status == "tampered":
        return WorkFactsTampered(
            "the stored Work no longer matches its fingerprint: its facts were changed after "
            "acceptance" + tail, work_id=str(work_id), changed_facts=list(facts or ()),
            **context)
    if status == "work_id_taken":
        return IdempotencyConflict("the work id is already used by another command" + tail,
                                   work_id=str(work_id), **context)
    if status == "other_work_id":
        return IdempotencyConflict("the same command was accepted under another work id" + tail,
                                   stored_work_id=str(work_id), **context)
    return IdempotencyConflict(
        "the same command and idempotency key were accepted with different facts" + tail,
        stored_work_id=str(work_id), **context)
