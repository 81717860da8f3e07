"""Accepting Work inside the caller's transaction (issue 3, item 2; docs/protocol/work.md).

``enqueue(scope, request)`` and ``enqueue_many(scope, requests)`` run inside the caller's
``transaction.atomic()`` when there is one: the Work exists only if the caller commits. Each call
is one statement (:mod:`durable_schedule.work.acceptance`): the SQL function enters the runtime
role and the caller's scope, writes, and restores role and scope as it found them, so the
caller's next ORM query runs exactly as before. Outside any atomic block the statement is its
own transaction.

``accept_in_scope(cur, scope_id, request)`` is the Schedule bridge's entry point, with a cursor
already inside a scoped runtime transaction; it runs the same statement without the role entry.
For every item, one INSERT writes the Work row, its dispatch row (due at the Work's due time) and
an ``accepted`` history row, with ``ON CONFLICT DO NOTHING``; on a conflict the stored row is
compared (compare-or-return, never a blind second write):

* same scope, command and idempotency key, the same fingerprint, and stored facts that still
  hash to it: the original Work is returned (``created=False``), whatever its state, even after
  it finished or expired;
* the same fingerprint but stored facts that differ from it (the row was changed by SQL after
  acceptance): ``WorkFactsTampered`` (DS233) naming the row and the changed facts;
* any other difference (payload, policy, plan, due time, deadline, a different explicit
  work id, or a work id taken by another identity): ``IdempotencyConflict`` (DS207).

``enqueue_many`` is all-or-nothing: every request is validated before anything is sent, and when
one item is refused nothing of the call is written. Refusals are answers of the statement, not
database errors, so a caller that catches them inside its atomic block can go on.

``accepted_at`` is ``durable_schedule_clock('clock')`` (``clock_timestamp()``) sampled by that
statement: insertion time, not request creation or commit (docs/protocol/work.md), and it is never
hashed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cached_property
from itertools import islice
from typing import Any

from durable_schedule.default_scope import scope_optional
from durable_schedule.errors import (
    DueAfterDeadline,
    InvalidArgument,
    InvalidIdentifier,
    PayloadTooLarge,
    PlannedWorkWithDueTime,
)
from durable_schedule.evaluation.fingerprint import Fingerprint, fingerprint
from durable_schedule.evaluation.policy import (
    ExecutionPolicy,
    RetryPolicy,
    as_instant,
    deadline_instant,
)
from durable_schedule.store import identifiers
from durable_schedule.store.transactions import statement_cursor, validate_scope_id
from durable_schedule.work import acceptance, codec
from durable_schedule.work.acceptance import AcceptedWork
from durable_schedule.work.safety import provider_safety

#: The retry policy stored for legacy Work (no execution policy, no deadline). Legacy requests
#: keep the v1 fingerprint, which does not hash retry settings, so this snapshot is the same for
#: every legacy request; changing these defaults affects future Work only.
LEGACY_RETRY = RetryPolicy()


def identifier(value: object, field: str) -> str:
    """1-200 characters, no surrounding spaces, the identifier rule of store/identifiers.py
    (DS115)."""
    if not isinstance(value, str):
        raise InvalidIdentifier(f"{field} must be a string", got=type(value).__name__)
    if (not value or len(value) > 200 or value != value.strip()
            or identifiers.problem(value) is not None):
        raise InvalidIdentifier(
            f"{field} must be 1-200 characters without control, format or separator characters "
            "or surrounding spaces",
            value=value,
        )
    return value


#: Names already found valid by :func:`identifier` (work names, versions, queues: few distinct
#: values, repeated by every request of a definition). The rule is a pure function of the
#: string, so a name checked once needs no second check; bounded, plain ``str`` only.
_REPEATED_NAMES: dict[str, None] = {}
_REPEATED_NAMES_MAX = 1024


def repeated_identifier(value: object, field: str) -> str:
    """:func:`identifier` for a low-cardinality field, remembering the valid answers."""
    if type(value) is str and value in _REPEATED_NAMES:
        return value
    identifier(value, field)
    if type(value) is str and len(_REPEATED_NAMES) < _REPEATED_NAMES_MAX:
        _REPEATED_NAMES[value] = None
    return value


#: ``work.queues``' validators, imported on first use (that module imports this one) and kept:
#: an import statement in ``__post_init__`` cost about 1 µs per request.
_ROUTING_CHECKS: tuple | None = None


def _routing_checks() -> tuple:
    global _ROUTING_CHECKS
    from durable_schedule.work.queues import validate_priority, validate_queue

    _ROUTING_CHECKS = (validate_queue, validate_priority)
    return _ROUTING_CHECKS


@dataclass(frozen=True)
class WorkRequest:
    """One enqueue request: identity, encoded payload and the immutable timing facts.

    ``payload`` is the codec's JSON value (a definition encodes before building the request).
    ``policy=None`` and ``deadline=None`` make a legacy request (fingerprint v1, default retry
    policy); anything else opts in (fingerprint v2). A planned policy starts at the acceptance
    instant, so it cannot also take ``due_at`` (DS208). Validation happens here, before any
    database write.
    """

    command_id: str
    idempotency_key: str
    work_name: str
    work_version: str
    payload: Any
    provider_safety: str
    policy: ExecutionPolicy | None = None
    deadline: datetime | None = None
    due_at: datetime | None = None
    work_id: uuid.UUID | None = None
    #: Routing facts (docs/work.md "Queues and priorities"): where and how soon it runs, not
    #: what it does -- outside the fingerprint, fixed by the first acceptance.
    queue: str = "default"
    priority: int = 0

    def __post_init__(self) -> None:
        validate_queue, validate_priority = _ROUTING_CHECKS or _routing_checks()
        validate_queue(self.queue)
        validate_priority(self.priority)
        identifier(self.command_id, "command_id")
        identifier(self.idempotency_key, "idempotency_key")
        repeated_identifier(self.work_name, "work_name")
        repeated_identifier(self.work_version, "work_version")
        set_ = object.__setattr__
        # One canonical encoding per request: the stored copy is decoded from it, the
        # fingerprint hashes its bytes and the acceptance parameter embeds its text (not
        # fields: equality and repr stay as they were).
        text, data = codec.canonical_text_and_bytes(self.payload, "payload")
        set_(self, "payload", codec.from_canonical(text))
        self.__dict__["_payload_text"] = text
        self.__dict__["_payload_bytes"] = data
        set_(self, "provider_safety", provider_safety(self.provider_safety).value)
        if self.policy is not None and not isinstance(self.policy, ExecutionPolicy):
            raise InvalidArgument("policy must be an ExecutionPolicy or None",
                                  got=type(self.policy).__name__)
        set_(self, "deadline", deadline_instant(self.deadline))
        if self.due_at is not None:
            set_(self, "due_at", as_instant(self.due_at, "due_at", InvalidArgument))
        if self.policy is not None and self.policy.plan is not None and self.due_at is not None:
            raise PlannedWorkWithDueTime("a planned request cannot also provide due_at")
        if self.work_id is not None and not isinstance(self.work_id, uuid.UUID):
            raise InvalidArgument("work_id must be a uuid.UUID or None",
                                  got=type(self.work_id).__name__)
        if self.work_id is not None and type(self.work_id) is not uuid.UUID:
            # A subclass may print or compare as something else: keep its 128 bits only, so
            # what is stored, compared and embedded in the acceptance parameter is a plain UUID.
            set_(self, "work_id", uuid.UUID(int=uuid.UUID.int.__get__(self.work_id)))

    @property
    def is_legacy(self) -> bool:
        return self.policy is None and self.deadline is None

    @cached_property
    def fingerprint(self) -> Fingerprint:
        """v1 for legacy requests, v2 otherwise; the acceptance instant is never hashed."""
        return fingerprint(
            work_name=self.work_name,
            work_version=self.work_version,
            payload_bytes=self.__dict__["_payload_bytes"],
            provider_safety=self.provider_safety,
            policy=self.policy,
            deadline=self.deadline,
            due_at=self.due_at,
        )

    @property
    def retry(self) -> RetryPolicy:
        return LEGACY_RETRY if self.policy is None else self.policy.retry

    @cached_property
    def retry_json(self) -> Any:
        """The retry snapshot stored with the Work (compared on a duplicate)."""
        return self.retry.to_json()



#: WorkRequest's fields in declaration order: :func:`new_request` fills exactly these.
_REQUEST_FIELDS = tuple(f.name for f in fields(WorkRequest))
if _REQUEST_FIELDS != ("command_id", "idempotency_key", "work_name", "work_version", "payload",
                       "provider_safety", "policy", "deadline", "due_at", "work_id", "queue",
                       "priority"):  # pragma: no cover - a WorkRequest edit
    raise RuntimeError("new_request must fill every WorkRequest field, in declaration order")
_new_object = object.__new__


def new_request(command_id: str, idempotency_key: str, work_name: str, work_version: str,
                payload: Any, provider_safety: str, policy: ExecutionPolicy | None,
                deadline: datetime | None, due_at: datetime | None, work_id: uuid.UUID | None,
                queue: str, priority: int) -> WorkRequest:
    """``WorkRequest(...)`` with every field given, as a definition's ``request`` builds it:
    the fields go into the frozen instance's ``__dict__`` and ``__post_init__`` runs, which is
    all the generated ``__init__`` does, without its twelve ``object.__setattr__`` calls (about
    2 us per request; docs/benchmarks.md "Acceptance, ninth look"). The same validation and
    refusals, the same instance (tests/work/test_request_fast.py compares them)."""
    request = _new_object(WorkRequest)
    request.__dict__.update(command_id=command_id, idempotency_key=idempotency_key,
                            work_name=work_name, work_version=work_version, payload=payload,
                            provider_safety=provider_safety, policy=policy, deadline=deadline,
                            due_at=due_at, work_id=work_id, queue=queue, priority=priority)
    request.__post_init__()
    return request

__all__ = ["AcceptedWork", "WorkRequest", "accept_in_scope", "accept_many_in_scope", "enqueue",
           "enqueue_many", "identifier"]


def _requests(value: object, limit: int | None = None) -> list[WorkRequest]:
    """The requests as a list, each a WorkRequest (DS406 otherwise). ``limit``: more than that
    many are refused (DS406) after reading one more than ``limit``, so a generator is never
    drained past what one call could take (an endless one would never return)."""
    if isinstance(value, WorkRequest | str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgument("requests must be an iterable of WorkRequest",
                              got=type(value).__name__)
    if limit is None:
        out = list(value)
    else:
        out = list(islice(value, limit + 1))
        if len(out) > limit:
            raise InvalidArgument(f"enqueue_many takes at most {limit} requests per call",
                                  got=f"more than {limit}")
    for position, request in enumerate(out):
        if not isinstance(request, WorkRequest):
            raise InvalidArgument("every request must be a WorkRequest", item=position,
                                  got=type(request).__name__)
    return out


def refuse_unrunnable(requests: list[WorkRequest], *, batch: bool) -> None:
    """DS218 for a request due at or after its absolute deadline. Admission needs ``due_at <=
    now < deadline``, so such Work would be accepted only to expire unrun; it is refused before
    any write instead (docs/work.md "Timing"). A batch is refused whole, naming every such
    item (``refused_items``, positions in the caller's list, as for DS207). Only the public
    acceptance paths refuse it: a schedule pass's request is not the caller's input."""
    refused = [position for position, request in enumerate(requests)
               if request.deadline is not None and request.due_at is not None
               and request.due_at >= request.deadline]
    if not refused:
        return
    first = requests[refused[0]]
    context: dict[str, Any] = {"command_id": first.command_id,
                               "idempotency_key": first.idempotency_key,
                               "due_at": first.due_at.isoformat(),
                               "deadline": first.deadline.isoformat()}
    if batch:
        context["refused_items"] = refused
    raise DueAfterDeadline("the request is due at or after its deadline (exclusive), so it "
                           "could never run; nothing was written", **context)


def accept_in_scope(
    cur, scope_id: str, request: WorkRequest, *, source_occurrence_id: int | None = None
) -> AcceptedWork:
    """Insert the Work (or return the identical original) through a cursor that is already
    inside a scoped runtime transaction for ``scope_id``. See the module docstring."""
    if not isinstance(request, WorkRequest):
        raise InvalidArgument("request must be a WorkRequest", got=type(request).__name__)
    prepared = acceptance.prepare(scope_id, [request], [source_occurrence_id])
    return prepared.send(cur, enter=False).results()[0]


def accept_many_in_scope(cur, scope_id: str, requests: Iterable[WorkRequest], *,
                         source_occurrence_ids: Iterable[int | None] | None = None
                         ) -> list[AcceptedWork]:
    """``accept_in_scope`` for several requests in one statement (a batched schedule pass):
    all or nothing, one result per request, in order."""
    batch = _requests(requests)
    ids = None if source_occurrence_ids is None else list(source_occurrence_ids)
    if ids is not None and len(ids) != len(batch):
        raise InvalidArgument("one source_occurrence_id per request",
                              requests=len(batch), source_occurrence_ids=len(ids))
    return acceptance.prepare(scope_id, batch, ids).send(cur, enter=False).results()


@scope_optional
def enqueue(scope: str, request: WorkRequest, *, using: str | None = None) -> AcceptedWork:
    """Accept ``request`` in ``scope`` inside the caller's transaction (or its own)."""
    if not isinstance(request, WorkRequest):
        raise InvalidArgument("request must be a WorkRequest", got=type(request).__name__)
    validate_scope_id(scope)
    refuse_unrunnable([request], batch=False)
    prepared = acceptance.prepare(scope, [request])
    with statement_cursor(using=using) as cur:
        sent = prepared.send(cur, enter=True)
    return sent.results()[0]


def refuse_oversized(items) -> None:
    """The call's payloads travel in one ``jsonb`` parameter, which PostgreSQL refuses above
    268,435,455 bytes: their canonical JSON together is bounded like one payload's (DS250,
    docs/work.md "Accepting Work"), so an oversized call is refused before anything is sent."""
    total = sum(len(request.__dict__["_payload_bytes"]) for request, _ in items)
    if total > codec.MAX_JSON_BYTES:
        raise PayloadTooLarge(
            f"the payloads of one enqueue_many call are {total} bytes of canonical JSON "
            f"together, more than {codec.MAX_JSON_BYTES}: split the call", size=total,
            limit=codec.MAX_JSON_BYTES, requests=len(items))


@scope_optional
def enqueue_many(scope: str, requests: Iterable[WorkRequest], *,
                 using: str | None = None) -> list[AcceptedWork]:
    """Accept up to 1,000 requests in ``scope`` in one statement; one result per request, in
    order. All or nothing: a refused item (DS207, DS233) raises and nothing is written."""
    validate_scope_id(scope)
    batch = _requests(requests, acceptance.MAX_BATCH)
    refuse_unrunnable(batch, batch=True)
    prepared = acceptance.prepare(scope, batch)
    refuse_oversized(prepared.items)
    with statement_cursor(using=using) as cur:
        sent = prepared.send(cur, enter=True)
    return sent.results()
