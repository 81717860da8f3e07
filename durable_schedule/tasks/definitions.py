"""Each task is one Work definition; the worker runs it through the Work runtime.

The definition's name is the task's module path (``app.tasks.send_invoice``) and its version an
option, so everything the runtime promises for Work -- leases, retries, attempt plans,
deadlines, reconcile-before-retry, recovery after a crash -- holds for tasks unchanged.

A worker meets task Work by name. Definitions are registered when a task is first enqueued in a
process, and a worker that has not imported the task's module resolves it on demand through
:func:`resolve_definition`, which the Work registry consults for names it does not know. It
imports only module paths inside an installed app (a Work name is data written by the
application; importing an arbitrary dotted path from a database row would let a tampered row
load any module) and only accepts a module-level object that is a task of a durable backend.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from inspect import iscoroutinefunction
from typing import Any

from django.apps import apps
from django.utils.module_loading import import_string

from durable_schedule.errors import DuplicateWorkDefinition, TaskOptionsConflict
from durable_schedule.tasks import arguments
from durable_schedule.tasks.compat import InvalidTask, Task, signals, task_backends
from durable_schedule.tasks.options import ResolvedOptions
from durable_schedule.work import registry
from durable_schedule.work.rows import EXPIRED
from durable_schedule.work.runtime import _returned_awaitable

_LOCK = threading.RLock()
log = logging.getLogger("durable_schedule.tasks")


def definition_for(task: Task, resolved: ResolvedOptions) -> registry.WorkDefinition:
    """The Work definition of ``task`` at its version, registered once per process."""
    name = task.module_path
    with _LOCK:
        existing = registry.registered_definition(name, resolved.version)
        if existing is not None:
            _same_options(existing, resolved, name)
            _attach_reconciler(task, existing)
            return existing
        try:
            definition = registry.define(name, resolved.version, safety=resolved.safety,
                                         policy=resolved.policy)
        except DuplicateWorkDefinition:
            # A plain work.define() of the same name and version: one name, two meanings.
            raise TaskOptionsConflict("a Work definition with this task's module path and "
                                      "version exists already", task=name,
                                      version=resolved.version) from None
        definition.executor(_Executor(name, resolved.version))
        definition.still_defined = lambda: _resolves(name, resolved.version)
        _attach_reconciler(task, definition)
        return definition


def _resolves(name: str, version: str) -> bool:
    """Whether a process that never registered ``name`` would define it at ``version`` now.

    Asked by registry.lookup for a task definition this process registered (when it enqueued
    the task or first ran its Work). Without it a task renamed, removed or no longer importable
    since then (or whose options now refuse it, or give it another version) stayed registered
    here: every attempt was admitted and failed with LookupError, retried until the attempts
    ran out, while a fresh worker suspended the same Work (unknown_definition). Now both
    suspend it.
    """
    return _resolved_task(name, version) is not None


def _same_options(definition: registry.WorkDefinition, resolved: ResolvedOptions,
                  name: str) -> None:
    if definition.safety != resolved.safety or definition.policy != resolved.policy:
        raise TaskOptionsConflict(
            "this task is already defined in this process with other options",
            task=name, version=resolved.version,
            defined_safety=definition.safety.value, requested_safety=resolved.safety.value)


# ---------------------------------------------------------------------- reconcilers
_RECONCILERS: dict[str, Callable[..., Any]] = {}


def reconciler(task: Task):
    """Register ``fn(context, *args, **kwargs) -> Applied | NotApplied | Unknown`` as the
    reconciler of a ``reconcile_before_retry`` task (docs/tasks.md "Provider safety")."""
    if not isinstance(task, Task):
        raise TaskOptionsConflict("reconciler() takes the task object", got=type(task).__name__)

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        with _LOCK:
            if _RECONCILERS.get(task.module_path, fn) is not fn:
                raise TaskOptionsConflict("this task has a reconciler already",
                                          task=task.module_path)
            _RECONCILERS[task.module_path] = fn
        return fn

    return register


def has_reconciler(task: Task) -> bool:
    return task.module_path in _RECONCILERS


def _attach_reconciler(task: Task, definition: registry.WorkDefinition) -> None:
    fn = _RECONCILERS.get(task.module_path)
    if fn is None or definition.reconciler_fn is not None:
        return

    def reconcile(ctx, payload):
        from durable_schedule.tasks import results, scoping

        # The backend the task runs at this Work's version on, as _Executor finds it: the task
        # this definition was registered from names its own backend, which need not be the
        # alias that accepted the Work (using(backend=...)).
        resolved = _resolved_task(definition.name, definition.version, ctx.using)
        backend = resolved[1] if resolved is not None else task.get_backend()
        found = results.read(ctx.scope, ctx.work_id, using=backend.database)
        task_result = results.build(task, backend.alias, *found)
        # The lost attempt sent task_started and no task_finished; a verdict that ends the
        # Work (Applied: succeeded; Unknown or a reconciler that raised: suspended) is its
        # end, so task_finished is sent once the verdict is recorded. NotApplied sends none:
        # the next attempt runs and sends its own.
        ctx.after_outcome(lambda: _finished_if_ended(task, backend, ctx))
        with scoping.scope(ctx.scope):  # as the task's run sees it (_Executor)
            return fn(results.context(task_result, ctx), *payload["args"], **payload["kwargs"])

    definition.reconciler(reconcile)


def _finished_if_ended(task: Task, backend, ctx) -> None:
    """``task_finished`` with the stored result, when the recorded verdict finished it."""
    from durable_schedule.tasks import results, scoping

    with scoping.scope(ctx.scope):  # receivers see the Work's scope, as during the run
        found = results.read(ctx.scope, ctx.work_id, using=backend.database)
        if found is None:
            return
        stored = results.build(task, backend.alias, *found)
        if stored.is_finished:
            results.notify(signals.task_finished, type(backend), stored)


def task_for_name(name: str) -> Task | None:
    """The module-level durable task called ``name``, or None (see the module docstring)."""
    found = _task_and_backend(name)
    return None if found is None else found[0]


def _task_and_backend(name: str) -> tuple[Task, Any] | None:
    from durable_schedule.tasks.backend import DurableBackend

    module_path, _, attr = name.rpartition(".")
    if not module_path or not inside_installed_app(module_path):
        return None
    try:
        candidate = import_string(name)
    except ImportError:
        return None
    except Exception:
        # The module exists but raises while it is imported (a bad deploy, a missing setting).
        # Raising from here escaped the worker's claim (registry.lookup runs inside it): the
        # whole pass failed, every pass after it too, and no other Work ran. As an unknown
        # name instead, its Work is suspended (unknown_definition) and the rest runs.
        log.exception("durable task module could not be imported; its Work is treated as "
                      "having no definition in this process: task=%s", name)
        return None
    if not isinstance(candidate, Task) or candidate.module_path != name:
        return None
    backend = candidate.get_backend()
    return (candidate, backend) if isinstance(backend, DurableBackend) else None


def inside_installed_app(module_path: str) -> bool:
    return any(module_path == app.name or module_path.startswith(app.name + ".")
               for app in apps.get_app_configs())


def resolve_definition(name: str, version: str) -> registry.WorkDefinition | None:
    """Registry fallback: define the task called ``name`` if it runs at ``version``."""
    found = _resolved_task(name, version)
    if found is None:
        return None
    task, _backend, resolved = found
    return definition_for(task, resolved)


def _resolved_task(name: str, version: str, database: str | None = None
                   ) -> tuple[Task, Any, ResolvedOptions] | None:
    """The task called ``name``, the durable backend it runs at ``version`` on and its options
    there; else None.

    Its own backend is asked first, then every other durable backend of ``TASKS`` in settings
    order: ``task.using(backend="tenant").enqueue()`` accepts Work at the version the "tenant"
    backend gives the task (its ``VERSION`` or ``TASK_OPTIONS``), and a worker must find the
    definition at that version. Asking only the task's own backend suspended such Work
    (unknown_definition) in every worker, also in the process that had just enqueued it.
    ``database``: the alias the worker serves the Work from; the backends on it are asked
    first (in the same order), because the run's result is read through the backend's
    ``DATABASE``: the task's own backend on another database read where the Work is not.
    """
    found = _task_and_backend(name)
    if found is None:
        return None
    task, own = found
    backends = [own, *_other_durable_backends(own)]
    if database is not None:
        backends.sort(key=lambda backend: backend.database != database)  # stable
    for backend in backends:
        try:
            resolved = backend.resolved_options(task)
        except InvalidTask:
            # Options the backend was built with but refuses for this task (TASK_OPTIONS
            # values are checked when used). Raising escaped the worker's claim, as an import
            # error did.
            log.exception("durable task options are invalid; its Work is treated as having "
                          "no definition on this backend: task=%s backend=%s", name,
                          backend.alias)
            continue
        if resolved.version == version:
            return task, backend, resolved
    return None  # Work of another version: the runtime suspends it (unknown_definition).


def _other_durable_backends(own) -> list[Any]:
    """The durable backends of ``TASKS`` other than ``own``, in settings order."""
    from durable_schedule.tasks.backend import DurableBackend

    others = []
    for alias in task_backends.settings:
        if alias == own.alias:
            continue
        try:
            backend = task_backends[alias]
        except Exception:  # noqa: BLE001 - another backend's settings are not this task's
            continue
        if isinstance(backend, DurableBackend):
            others.append(backend)
    return others


#: What fails an attempt when a task raises it (work/runtime.py ``_ESCAPED_SIGNALS``): any
#: Exception, and a GeneratorExit or an async task's own CancelledError leaking out.
_ATTEMPT_FAILURES = (Exception, GeneratorExit, asyncio.CancelledError)


class _Executor:
    """The executor of one task's Work: call the function with the stored arguments."""

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version

    def __call__(self, ctx, payload: dict[str, Any]) -> Any:
        from durable_schedule.tasks import scoping

        # The run (and the worker-side signal receivers) sees the Work's scope as its ambient
        # scope, as the code that enqueued it did: a task it enqueues goes to the same tenant
        # and get_result() reads that tenant's results, instead of the backend's default scope.
        with scoping.scope(ctx.scope):
            return self._run(ctx, payload)

    def _run(self, ctx, payload: dict[str, Any]) -> Any:
        from durable_schedule.tasks import results

        found = _resolved_task(self.name, self.version, ctx.using)
        if found is None:
            # Only when the task went away between the claim (registry.lookup asked
            # _resolves, and a task already gone is suspended there) and this call.
            raise LookupError(f"task {self.name!r} can no longer be imported")
        # The backend the task runs at this version on: the result the run and the signals
        # see names it, and is read through its database.
        task, backend, _resolved = found
        task_result = results.running(task, backend, ctx, payload)
        signals.task_started.send(sender=type(backend), task_result=task_result)
        try:
            call_args = list(payload["args"])
            if task.takes_context:
                call_args.insert(0, results.context(task_result, ctx))
            value = arguments.return_value(_call(task, ctx, call_args, payload["kwargs"]))
        except _ATTEMPT_FAILURES as exc:
            finished = results.after_attempt(task_result, exc)
            results.notify(signals.task_finished, type(backend), finished)
            raise
        # KeyboardInterrupt and SystemExit pass without task_finished: they stop the worker and
        # the attempt records no outcome (docs/work.md "What an executor raises"); it is
        # recovered after its lease and may yet succeed, so a FAILED signal would be false.
        if ctx.deadline is None:
            results.notify(signals.task_finished, type(backend),
                           results.after_attempt(task_result, None, value))
        else:
            # A return is a success only if the store records it before the Work's absolute
            # deadline; otherwise it quarantines the value and ends the Work expired
            # (docs/work.md "Deadlines"). A batch records its outcomes after its last attempt,
            # so a return just before the deadline can be recorded after it: the signal waits
            # for that record and says what the store decided.
            ctx.after_outcome(lambda: _finished_as_recorded(backend, ctx, task_result, value))
        return value


def _finished_as_recorded(backend, ctx, task_result, value: Any) -> None:
    """``task_finished`` for a task that returned, once its outcome is recorded: FAILED with
    ``TaskExpired`` when the store ended the Work expired (the return was recorded at or after
    the deadline), else SUCCESSFUL."""
    from durable_schedule.tasks import results, scoping

    with scoping.scope(ctx.scope):  # receivers see the Work's scope, as during the run
        found = results.read(ctx.scope, ctx.work_id, using=backend.database)
        late = found is not None and found[0].state == EXPIRED
        finished = results.after_attempt(task_result, None, value, late=late)
        results.notify(signals.task_finished, type(backend), finished)


def _call(task: Task, ctx, args: list, kwargs: dict) -> Any:
    if iscoroutinefunction(task.func):
        value = asyncio.run(_run_async(task.func(*args, **kwargs), ctx))
    else:
        value = task.func(*args, **kwargs)
    # A task that hands back a coroutine (a plain wrapper around an async def, or an async def
    # returning another one) fails as a Work executor doing so does: DS260, the coroutine
    # closed. Otherwise it failed as a return value that is not JSON, and the coroutine warned
    # "never awaited" later, from the garbage collector.
    refused = _returned_awaitable(value, "task")
    if refused is not None:
        raise refused
    return value


async def _run_async(coro, ctx) -> Any:
    """Run an async task; cancel it when the attempt's lease or deadline budget ends.

    ``ctx.cancelled`` is the runtime's cancellation signal (set when the local lease or the
    absolute deadline runs out); the watcher turns it into ``CancelledError`` inside the task,
    so an ``await`` in the task stops there instead of running past its deadline.
    """
    job = asyncio.ensure_future(coro)
    loop = asyncio.get_running_loop()
    watcher = loop.run_in_executor(None, _cancel_when_signalled, ctx, job, loop)
    try:
        return await job
    except asyncio.CancelledError:
        if not ctx.cancelled.is_set():
            raise  # the task's own (an await of a future something else cancelled): as raised
        raise TimeoutError("the async task was cancelled: its lease or deadline ended") from None
    finally:
        await watcher


def _cancel_when_signalled(ctx, job: asyncio.Future, loop: asyncio.AbstractEventLoop) -> None:
    # Short waits, so the watcher thread ends soon after the task does.
    while not job.done():
        if ctx.cancelled.wait(0.05) or ctx.past_cancel_point():
            loop.call_soon_threadsafe(job.cancel)
            return
