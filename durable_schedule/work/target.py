"""Immutable Work target snapshots: what a Schedule generation stores (issue 3, "Bridge contract").

``definition.target(payload=..., deadline_after=..., queue=..., priority=...)`` returns a
:class:`WorkTarget`: the work name and version, the *encoded* payload, the provider safety and
the execution policy as JSON, an optional deadline relative to a base instant the Schedule
processor chooses, and the routing (queue and priority) every occurrence's Work is accepted
with (docs/work.md "Queues and priorities"). A generation
stores ``target.to_json()``; the processor later rebuilds it with ``WorkTarget.from_json(...)``
and turns it into a :class:`~durable_schedule.work.enqueue.WorkRequest` with ``to_request``.

The snapshot never changes with later configuration: docs/protocol/work.md "These are immutable
request facts: configuration changes affect future Work only". Its payload is a detached canonical
copy, so mutating the dict a caller passed in changes nothing, and ``to_json`` returns fresh copies.

The routing keys are written only when they differ from the default (queue ``"default"``,
priority 0): a target without routing stores exactly the JSON it stored before routing existed,
so the fingerprints of existing generations and "an unchanged declaration makes no generation"
hold, and a stored target without the keys reads as the default routing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from durable_schedule.errors import InvalidArgument
from durable_schedule.evaluation.policy import (
    ExecutionPolicy,
    as_duration,
    as_instant,
    checked_add,
)
from durable_schedule.work import codec
from durable_schedule.work.enqueue import WorkRequest, identifier, repeated_identifier
from durable_schedule.work.queues import validate_priority
from durable_schedule.work.safety import provider_safety

SCHEMA = "durable_schedule.work.target.v1"
_KEYS = ("schema", "work_name", "work_version", "payload", "provider_safety", "policy",
         "deadline_after_us")
#: Optional keys, present only for a non-default routing (see the module docstring).
_ROUTING_KEYS = ("queue", "priority")
_REQUIRED = frozenset(_KEYS)
_ALLOWED = frozenset(_KEYS + _ROUTING_KEYS)
DEFAULT_QUEUE, DEFAULT_PRIORITY = "default", 0


@dataclass(frozen=True)
class WorkTarget:
    """A JSON-serializable, immutable snapshot of a Work request without its identity."""

    work_name: str
    work_version: str
    payload: Any
    provider_safety: str
    policy_json: dict | None
    deadline_after_us: int | None = None
    #: Routing of every occurrence's Work (the same facts as ``WorkRequest.queue/priority``).
    queue: str = DEFAULT_QUEUE
    priority: int = DEFAULT_PRIORITY

    def __post_init__(self) -> None:
        identifier(self.work_name, "work_name")
        identifier(self.work_version, "work_version")
        # The identifier rule and the priority range here (DS115, DS201), so a stored target
        # always reads back; whether the queue is one of DURABLE_SCHEDULE['QUEUES'] (DS244) is
        # checked where a target is made or given to a schedule (definition.target,
        # schedules.validation.target), like enqueue checks it for a new request.
        repeated_identifier(self.queue, "queue")
        validate_priority(self.priority)
        set_ = object.__setattr__
        set_(self, "payload", codec.json_value(self.payload, "payload"))
        set_(self, "provider_safety", provider_safety(self.provider_safety).value)
        if self.policy_json is not None:
            # Validates every rule of docs/protocol/work.md (DS203/DS204/DS206) and keeps the
            # canonical form.
            set_(self, "policy_json", ExecutionPolicy.from_json(self.policy_json).to_json())
        after = self.deadline_after_us
        if after is not None:
            if isinstance(after, bool) or not isinstance(after, int) or after <= 0:
                raise InvalidArgument("deadline_after_us must be a positive int or None",
                                      got=after)

    def __hash__(self) -> int:
        return hash(codec.canonical_json(self.to_json(), "target", limit=None))

    @property
    def policy(self) -> ExecutionPolicy | None:
        return None if self.policy_json is None else ExecutionPolicy.from_json(self.policy_json)

    @property
    def deadline_after(self) -> timedelta | None:
        return None if self.deadline_after_us is None else timedelta(
            microseconds=self.deadline_after_us)

    def to_json(self) -> dict:
        """The stored form (plain JSON types; a fresh copy on every call). The routing keys
        only when not the default (see the module docstring)."""
        stored = {
            "schema": SCHEMA,
            "work_name": self.work_name,
            "work_version": self.work_version,
            "payload": self.payload,
            "provider_safety": self.provider_safety,
            "policy": self.policy_json,
            "deadline_after_us": self.deadline_after_us,
        }
        if self.queue != DEFAULT_QUEUE:
            stored["queue"] = self.queue
        if self.priority != DEFAULT_PRIORITY:
            stored["priority"] = self.priority
        # The payload was bounded when the target was made; the snapshot around it is not.
        return codec.json_value(stored, "target", limit=None)

    @classmethod
    def from_json(cls, d: Any) -> WorkTarget:
        """Inverse of :meth:`to_json`; unknown, missing or invalid fields raise a typed error.
        A target stored without routing keys (every target before they existed) reads as the
        default queue at priority 0."""
        if not isinstance(d, dict) or (d.keys() != _REQUIRED
                                       and not _REQUIRED <= d.keys() <= _ALLOWED):
            raise InvalidArgument(f"a Work target is an object with the keys {_KEYS} and "
                                  f"optionally {_ROUTING_KEYS}",
                                  got=d if not isinstance(d, dict) else sorted(d))
        if d["schema"] != SCHEMA:
            raise InvalidArgument("unknown Work target schema", schema=d["schema"])
        return cls(d["work_name"], d["work_version"], d["payload"], d["provider_safety"],
                   d["policy"], d["deadline_after_us"], d.get("queue", DEFAULT_QUEUE),
                   d.get("priority", DEFAULT_PRIORITY))

    def to_request(
        self,
        *,
        command_id: str,
        idempotency_key: str,
        work_id: uuid.UUID | None,
        due_at: datetime | None = None,
        accepted_base: datetime | None = None,
    ) -> WorkRequest:
        """The enqueue request for one occurrence. The deadline is ``accepted_base +
        deadline_after`` (``accepted_base`` is required exactly when the target has one)."""
        deadline = None
        if self.deadline_after_us is not None:
            if accepted_base is None:
                raise InvalidArgument("this target has a relative deadline: pass accepted_base")
            base = as_instant(accepted_base, "accepted_base", InvalidArgument)
            # as_duration, not timedelta(): a stored value past the timedelta range (a row
            # written by hand) is a typed refusal (DS215) the processor quarantines, not an
            # OverflowError that would end its whole pass.
            after = as_duration(self.deadline_after_us, "deadline_after", InvalidArgument)
            deadline = checked_add(base, after, "deadline")
        return WorkRequest(
            command_id=command_id,
            idempotency_key=idempotency_key,
            work_name=self.work_name,
            work_version=self.work_version,
            payload=self.payload,
            provider_safety=self.provider_safety,
            policy=self.policy,
            deadline=deadline,
            due_at=due_at,
            work_id=work_id,
            queue=self.queue,
            priority=self.priority,
        )


def deadline_after_us(value: object) -> int | None:
    """A relative deadline (timedelta or int microseconds) as positive int microseconds."""
    if value is None:
        return None
    after = as_duration(value, "deadline_after", InvalidArgument)
    us = after // timedelta(microseconds=1)
    if us <= 0:
        raise InvalidArgument("deadline_after must be greater than zero", value=str(value))
    return us
