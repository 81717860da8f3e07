"""Work definitions: ``work.define(name, version, ...)`` and the per-process registry (issue 3, 1).

A definition names one immutable Work version: its provider safety, its default execution policy
(``None`` keeps the legacy completion-relative behaviour and the v1 fingerprint), its codec, the
executor that performs the effect and, for ``reconcile_before_retry`` Work, the reconciler that
establishes whether an earlier admitted attempt took effect. docs/protocol/work.md: "Give changed
semantics a new Work version and retain the registration needed to interpret historical Work" -- a
worker that meets Work whose (name, version) is not registered in its process does not guess: it
suspends the Work with reason ``unknown_definition`` and keeps it (docs/work.md).

Definitions live in a module every process imports; the app's ``ready()`` imports the ``work``
module of every installed app (:func:`autodiscover`, unless ``DURABLE_SCHEDULE["AUTODISCOVER"]``
is False), so ``<app>/work.py`` is the natural place.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from importlib import import_module
from typing import Any

from django.utils.module_loading import module_has_submodule

from durable_schedule.errors import DuplicateWorkDefinition, InvalidArgument
from durable_schedule.evaluation.policy import ExecutionPolicy
from durable_schedule.work import codec as codecs
from durable_schedule.work.enqueue import (
    AcceptedWork,
    WorkRequest,
    enqueue,
    identifier,
    new_request,
)
from durable_schedule.work.queues import validate_queue
from durable_schedule.work.safety import ProviderSafety, provider_safety
from durable_schedule.work.target import WorkTarget, deadline_after_us

_REGISTRY: dict[tuple[str, str], WorkDefinition] = {}
_LOCK = threading.Lock()

class _DefinitionPolicy:
    def __repr__(self) -> str:
        return "DEFINITION_POLICY"


#: ``policy=`` default of ``request()`` / ``enqueue()``: the definition's own policy (None is
#: a real choice there: legacy timing, so the default needs its own marker).
DEFINITION_POLICY: Any = _DefinitionPolicy()

Executor = Callable[[Any, Any], Any]
Reconciler = Callable[[Any, Any], Any]


class WorkDefinition:
    """One registered (name, version). Create it with :func:`define`."""

    def __init__(self, name: str, version: str, safety: ProviderSafety,
                 policy: ExecutionPolicy | None, codec: codecs.Codec) -> None:
        self.name = name
        self.version = version
        self.safety = safety
        self.policy = policy
        self.codec = codec
        self.executor_fn: Executor | None = None
        self.reconciler_fn: Reconciler | None = None
        #: ``fn() -> bool``, asked by :func:`lookup` each time: False when the code behind a
        #: definition registered on demand is gone (the tasks backend's: a task renamed, removed
        #: or no longer importable), so this process treats the name as unknown, as a process
        #: that never registered it does, instead of admitting attempts that cannot run.
        self.still_defined: Callable[[], bool] | None = None

    def __repr__(self) -> str:
        return f"<WorkDefinition {self.name} {self.version} {self.safety.value}>"

    # ------------------------------------------------------------ registration decorators
    def executor(self, fn: Executor) -> Executor:
        """Register ``fn(ctx, payload) -> result`` (a JSON value) as the effect."""
        if self.executor_fn is not None:
            raise DuplicateWorkDefinition("this Work already has an executor",
                                          work_name=self.name, work_version=self.version)
        if not callable(fn):
            raise InvalidArgument("executor must be callable")
        self.executor_fn = fn
        return fn

    def reconciler(self, fn: Reconciler) -> Reconciler:
        """Register ``fn(ctx, payload) -> Applied(result) | NotApplied() | Unknown()``."""
        if self.reconciler_fn is not None:
            raise DuplicateWorkDefinition("this Work already has a reconciler",
                                          work_name=self.name, work_version=self.version)
        if not callable(fn):
            raise InvalidArgument("reconciler must be callable")
        self.reconciler_fn = fn
        return fn

    # ------------------------------------------------------------ requests
    def request(self, *, command: str, idempotency_key: str, payload: Any,
                deadline: datetime | None = None, due_at: datetime | None = None,
                work_id: uuid.UUID | None = None,
                policy: ExecutionPolicy | None = DEFINITION_POLICY,
                queue: str = "default", priority: int = 0) -> WorkRequest:
        """The enqueue request for this definition (payload encoded by its codec).

        ``policy`` overrides the definition's execution policy for this one request: an
        ``ExecutionPolicy`` opts in (fingerprint v2, validated like any policy), ``None`` asks
        for legacy timing (v1 unless a deadline is given). Left out, the definition's policy
        applies. The policy is an immutable fact of the request: a duplicate with another
        policy conflicts (DS207).
        """
        if policy is DEFINITION_POLICY:
            policy = self.policy
        elif policy is not None and not isinstance(policy, ExecutionPolicy):
            raise InvalidArgument("policy must be an ExecutionPolicy or None",
                                  got=type(policy).__name__)
        # The default codec's encode is the canonical normalization WorkRequest applies to
        # every payload anyway (validation, DS209, a detached copy): done once, not twice.
        encoded = payload if type(self.codec) is codecs.JsonCodec else self.codec.encode(payload)
        # WorkRequest(...) without the frozen dataclass's per-field setattr (new_request)
        return new_request(command, idempotency_key, self.name, self.version, encoded,
                           self.safety.value, policy, deadline, due_at, work_id, queue, priority)

    def enqueue(self, *, scope: str | None = None, command: str, idempotency_key: str, payload: Any,
                deadline: datetime | None = None, due_at: datetime | None = None,
                work_id: uuid.UUID | None = None,
                policy: ExecutionPolicy | None = DEFINITION_POLICY,
                using: str | None = None, queue: str = "default",
                priority: int = 0) -> AcceptedWork:
        """Accept Work inside the caller's ``transaction.atomic()`` (see work.enqueue);
        ``policy`` as in :meth:`request`; ``queue`` and ``priority`` (-100..100, higher runs
        first) route it (docs/work.md "Queues and priorities")."""
        req = self.request(command=command, idempotency_key=idempotency_key, payload=payload,
                           deadline=deadline, due_at=due_at, work_id=work_id, policy=policy,
                           queue=queue, priority=priority)
        # scope by keyword: scope_optional resolves it directly instead of binding the
        # arguments to the signature (the same rule; docs/benchmarks.md "Acceptance, fourth look")
        return enqueue(scope=scope, request=req, using=using)

    def target(self, *, payload: Any, deadline_after: timedelta | int | None = None,
               queue: str = "default", priority: int = 0) -> WorkTarget:
        """An immutable target snapshot for a Schedule (see :mod:`.target`). ``queue`` and
        ``priority`` route every occurrence's Work, with enqueue's rules (DS115, DS244,
        DS406)."""
        return WorkTarget(
            work_name=self.name,
            work_version=self.version,
            payload=self.codec.encode(payload),
            provider_safety=self.safety.value,
            policy_json=None if self.policy is None else self.policy.to_json(),
            deadline_after_us=deadline_after_us(deadline_after),
            queue=validate_queue(queue),
            priority=priority,
        )


def define(name: str, version: str, *, safety: ProviderSafety | str,
           policy: ExecutionPolicy | None = None,
           codec: codecs.Codec | None = None) -> WorkDefinition:
    """Register Work ``name`` at ``version``; each (name, version) may be defined once (DS202).

    ``safety`` is required: whether a lost attempt may simply be repeated is a property of the
    provider that only the author knows. ``policy=None`` keeps legacy timing (v1 fingerprint).
    """
    identifier(name, "name")
    identifier(version, "version")
    safe = provider_safety(safety)
    if policy is not None and not isinstance(policy, ExecutionPolicy):
        raise InvalidArgument("policy must be an ExecutionPolicy or None",
                              got=type(policy).__name__)
    chosen = codecs.JSON if codec is None else codec
    if (isinstance(chosen, type) or not isinstance(chosen, codecs.Codec)
            or not callable(chosen.encode) or not callable(chosen.decode)):
        # A class (``codec=JsonCodec``) passes the protocol check, as does an object whose
        # encode is not callable: every request of the definition then failed later with a
        # bare TypeError instead of the definition being refused here.
        raise InvalidArgument("codec must be an object (not a class) with callable "
                              "encode(value) and decode(data) methods",
                              got=repr(codec)[:80])
    definition = WorkDefinition(name, version, safe, policy, chosen)
    with _LOCK:
        if (name, version) in _REGISTRY:
            raise DuplicateWorkDefinition("this Work name and version are already defined",
                                          work_name=name, work_version=version)
        _REGISTRY[(name, version)] = definition
    return definition


#: Fallbacks for names this process has not registered yet: ``fn(name, version)`` returns a
#: definition it registered, or None. The tasks backend adds one that imports a task by its
#: module path (durable_schedule/tasks/definitions.py), so a worker need not import every task
#: module up front.
_RESOLVERS: list[Callable[[str, str], WorkDefinition | None]] = []


def add_resolver(fn: Callable[[str, str], WorkDefinition | None]) -> None:
    """Consult ``fn`` for (name, version) pairs that are not registered (once per fn)."""
    with _LOCK:
        if fn not in _RESOLVERS:
            _RESOLVERS.append(fn)


def lookup(name: str, version: str) -> WorkDefinition | None:
    """The definition registered in this process (or by a resolver), or None."""
    if not isinstance(name, str) or not isinstance(version, str):
        # Checked here: a resolver (the tasks backend's) parses the name as text.
        raise InvalidArgument("lookup takes a name and a version as strings",
                              got=f"{type(name).__name__}, {type(version).__name__}")
    found = _REGISTRY.get((name, version))
    if found is not None:
        if found.still_defined is not None and not found.still_defined():
            return None
        return found
    for resolve in tuple(_RESOLVERS):
        found = resolve(name, version)
        if found is not None:
            return found
    return None


def registered_definition(name: str, version: str) -> WorkDefinition | None:
    """The definition registered in this process, without consulting resolvers."""
    return _REGISTRY.get((name, version))


def registered() -> tuple[WorkDefinition, ...]:
    """Every definition of this process, in registration order."""
    return tuple(_REGISTRY.values())


def autodiscover() -> None:
    """Import ``<app>.work`` of every installed app, so their definitions are registered.

    Idempotent (a module is imported once per process). An app without a ``work`` module is
    skipped; an error raised while importing one that exists propagates, with a note naming the
    module, the same rule as Django's admin autodiscovery: a broken work.py must stop the process
    rather than leave it running without the definitions it registers.
    """
    from django.apps import apps

    for app_config in apps.get_app_configs():
        module = f"{app_config.name}.work"
        try:
            import_module(module)
        except Exception as exc:
            if module_has_submodule(app_config.module, "work"):
                exc.add_note(f"raised while durable_schedule imported {module} (Work "
                             "autodiscovery; DURABLE_SCHEDULE['AUTODISCOVER'] turns it off)")
                raise


def _unregister(name: str, version: str) -> None:
    """Forget a definition (test support only: definitions are process-wide)."""
    with _LOCK:
        _REGISTRY.pop((name, version), None)
