"""``DurableBackend``: Django's Tasks framework on the durable Work runtime (docs/tasks.md).

    TASKS = {"default": {"BACKEND": "durable_schedule.tasks.DurableBackend",
                         "OPTIONS": {"SCOPE": "main"}}}

``enqueue`` accepts Work in the caller's transaction when the store's database alias is the one
the caller's ``transaction.atomic()`` is on (Django has no ENQUEUE_ON_COMMIT; none is needed):
task and data commit together or not at all. ``task_enqueued`` is sent on that commit.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db import connections, transaction
from django.utils import timezone

from durable_schedule import conf
from durable_schedule.errors import (
    DurableError,
    EnqueueInManualTransaction,
    InvalidIdentifier,
    InvalidScope,
    InvalidTaskOptions,
)
from durable_schedule.evaluation.policy import ExecutionPolicy, as_instant, checked_add
from durable_schedule.store.transactions import validate_scope_id
from durable_schedule.tasks import arguments, results, scoping
from durable_schedule.tasks.compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    signals,
)
from durable_schedule.tasks.definitions import (
    definition_for,
    has_reconciler,
    inside_installed_app,
    task_for_name,
)
from durable_schedule.tasks.options import OPTION_NAMES, DurableTask, ResolvedOptions, resolve
from durable_schedule.work.enqueue import enqueue as accept
from durable_schedule.work.enqueue import repeated_identifier
from durable_schedule.work.safety import ProviderSafety

OPTION_KEYS = frozenset({"SCOPE", "VERSION", "SAFETY", "POLICY", "DEADLINE_AFTER", "DATABASE",
                         "TASK_OPTIONS"})
DEFAULT_SCOPE = "default"


class DurableBackend(BaseTaskBackend):
    """Durable tasks: leases, retries, plans, deadlines, reconciliation, tenant scopes."""

    task_class = DurableTask

    supports_defer = True  # run_after becomes the Work's due time
    supports_async_task = True  # async def tasks run on an event loop in the worker
    supports_get_result = True  # results are the Work rows, readable from any process
    supports_priority = True  # the Work claim orders by priority, then due time

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = set(self.options) - OPTION_KEYS
        if unknown:
            raise InvalidTaskOptions("unknown OPTIONS for the durable tasks backend",
                                     backend=alias, unknown=sorted(unknown),
                                     known=sorted(OPTION_KEYS))
        per_task = self.options.get("TASK_OPTIONS", {})
        if not isinstance(per_task, dict):
            raise InvalidTaskOptions("OPTIONS['TASK_OPTIONS'] must map module paths to dicts",
                                     backend=alias)
        _check_task_options(alias, per_task)
        _check_queues(alias, self.queues)
        _check_defaults(alias, self.options)
        scope = self.options.get("SCOPE")
        self._scope: str | None = None if scope is None else validate_scope_id(scope)
        _declare_scopes(alias, (validate_scope_id(values["scope"])
                                for values in per_task.values()
                                if isinstance(values, dict) and values.get("scope") is not None))

    @property
    def default_scope(self) -> str:
        """OPTIONS['SCOPE'] (checked when the backend is built), else DEFAULT_SCOPE, else
        "default". DEFAULT_SCOPE is read at use: Django's task checks build the backend, and
        an invalid one is the settings check's DS411 (E005), raised here too where a task
        needs its scope, never replaced by "default" (an empty one was)."""
        if self._scope is not None:
            return self._scope
        configured = conf.validated_default_scope()
        return DEFAULT_SCOPE if configured is None else configured

    @property
    def database(self) -> str:
        """The alias of OPTIONS['DATABASE'], else the store's. Read at use, not in __init__:
        Django's task checks build the backend, and a DURABLE_SCHEDULE in a wrong shape
        (reported by E005) must not turn the check run into a traceback."""
        return self.options.get("DATABASE") or conf.database_alias()

    # ------------------------------------------------------------------ validation
    def validate_task(self, task: Task) -> None:
        # Django's own checks call ``run_after.utcoffset()`` and compare ``priority`` with ints:
        # a timedelta, a string or a number of the wrong type would escape them as a bare
        # AttributeError or TypeError instead of InvalidTask.
        if task.run_after is not None and not isinstance(task.run_after, datetime):
            raise InvalidTask(f"run_after must be an aware datetime, not "
                              f"{type(task.run_after).__name__}")
        if task.run_after is not None and timezone.is_naive(task.run_after):
            # Django checks this only under USE_TZ; the Work's due time is an instant whatever
            # USE_TZ says, and a naive one was refused later, at enqueue, as DS406 (not an
            # InvalidTask, and after using() had accepted it).
            raise InvalidTask("run_after must be an aware datetime (durable tasks need one "
                              "also when USE_TZ is False)")
        if task.run_after is not None:
            # An aware run_after whose offset puts it outside the UTC range (datetime.max at
            # -14:00, datetime.min at +14:00) passed using() and failed only at enqueue, as a
            # DS215 WorkArithmeticOutOfRange instead of InvalidTask.
            try:
                as_instant(task.run_after, "run_after")
            except DurableError as exc:
                raise InvalidTask(f"run_after cannot be a Work's due time ({exc.message})"
                                  ) from None
        if type(task.priority) is not int:
            raise InvalidTask(f"priority must be a whole number between -100 and 100, not "
                              f"{type(task.priority).__name__}")
        super().validate_task(task)
        if "." in task.func.__qualname__:
            # Django's module-level check only refuses "<locals>": a function decorated inside
            # a class body passed it, and its module path (app.tasks.Holder.run) names no
            # module attribute, so no worker resolved it (definitions.py) and its Work was
            # suspended (unknown_definition) without an attempt.
            raise InvalidTask(f"durable task {task.module_path}: its module path does not "
                              "name a module-level attribute (a task defined in a class "
                              "body); workers find a task by its module path, so define it "
                              "at module level")
        try:
            # The module path is the Work name (DS115: at most 200 characters): a longer one
            # passed here and failed every enqueue with InvalidIdentifier.
            repeated_identifier(task.module_path, "name")
        except InvalidIdentifier as exc:
            raise InvalidTask(f"durable task {task.module_path[:200]}: its module path is not "
                              f"a Work name ({exc.code}: {exc.message})") from None
        if apps.apps_ready and not inside_installed_app(task.func.__module__):
            # A worker imports task code only from installed apps (definitions.py): Work of
            # this task was accepted, then every attempt failed with LookupError (or, in a
            # worker that had not imported it, was suspended) and get_result() answered
            # TaskResultDoesNotExist for the id enqueue() had just returned.
            raise InvalidTask(f"durable task {task.module_path} is not defined in a module of "
                              "an installed app (INSTALLED_APPS): workers import task code "
                              "only from installed apps, so it could never run")
        if not self.queues:
            # Django's empty QUEUES admits any queue name; the Work's queue is an identifier,
            # which enqueue would refuse (DS115) only after using() had accepted the task.
            try:
                repeated_identifier(task.queue_name, "queue")
            except InvalidIdentifier as exc:
                raise InvalidTask(f"queue_name is not a valid queue name ({exc})") from None
        resolved = self.resolved_options(task)
        if resolved.scope is not None:
            _declare_scopes(self.alias, (resolved.scope,))

    def resolved_options(self, task: Task) -> ResolvedOptions:
        """The task's options after the precedence rule, or InvalidTask naming the bad one."""
        try:
            resolved = resolve(task, self.options)
        except ValueError as exc:
            raise InvalidTask(f"durable task {task.module_path}: {exc}") from None
        if resolved.policy is not None and not isinstance(resolved.policy, ExecutionPolicy):
            raise InvalidTask(f"durable task {task.module_path}: policy must be an "
                              f"ExecutionPolicy, not {type(resolved.policy).__name__}")
        if resolved.deadline_after is not None and (
                not isinstance(resolved.deadline_after, timedelta)
                or resolved.deadline_after <= timedelta(0)):
            raise InvalidTask(f"durable task {task.module_path}: deadline_after must be a "
                              "positive timedelta")
        if resolved.scope is not None:
            # InvalidTask, as for every other option: an InvalidScope escaped validate_task
            # (Django's contract is InvalidTask) and, in a worker, the claim, failing the pass.
            try:
                validate_scope_id(resolved.scope)
            except InvalidScope as exc:
                raise InvalidTask(f"durable task {task.module_path}: scope is not a scope id "
                                  f"({exc.code}: {exc.message})") from None
        if not isinstance(resolved.version, str) or not resolved.version:
            raise InvalidTask(f"durable task {task.module_path}: version must be a string")
        try:
            # The Work version rule (DS115): a version with surrounding spaces, a control
            # character or over 200 characters passed here and failed every enqueue (and
            # tasks.target()) with InvalidIdentifier instead of InvalidTask.
            repeated_identifier(resolved.version, "version")
        except InvalidIdentifier as exc:
            raise InvalidTask(f"durable task {task.module_path}: version is not a Work "
                              f"version ({exc.code}: {exc.message})") from None
        return resolved

    def runnable_options(self, task: Task) -> ResolvedOptions:
        """The options of a task about to be accepted: a ``reconcile_before_retry`` task must
        have its reconciler (registered after ``@task``, so checked here, not at decoration)."""
        self.validate_task(task)
        _check_findable(task)
        resolved = self.resolved_options(task)
        if (resolved.safety is ProviderSafety.RECONCILE_BEFORE_RETRY
                and not has_reconciler(task)):
            raise InvalidTask(f"durable task {task.module_path} is reconcile_before_retry: "
                              "register its reconciler with @durable_schedule.tasks."
                              "reconciler(task) before enqueuing it")
        return resolved

    # ------------------------------------------------------------------ enqueue
    def enqueue(self, task: Task, args, kwargs) -> TaskResult:
        _refuse_manual_transaction(self.database)
        resolved = self.runnable_options(task)
        arguments.fit(task, args, kwargs)
        payload = arguments.to_json(args, kwargs)
        definition = definition_for(task, resolved)
        scope = resolved.scope or scoping.ambient() or self.default_scope
        work_id = uuid.uuid4()
        deadline = None
        if resolved.deadline_after is not None:
            # DS215, not OverflowError, for a deadline_after no instant can be that far past now.
            deadline = checked_add(_database_now(self.database), resolved.deadline_after,
                                   "deadline (now + deadline_after)")
        accepted = accept(scope, definition.request(
            command=task.module_path[:200], idempotency_key=str(work_id), payload=payload,
            deadline=deadline, due_at=task.run_after, work_id=work_id,
            queue=task.queue_name, priority=task.priority), using=self.database)
        result = TaskResult(
            task=task, id=str(accepted.work_id), status=TaskResultStatus.READY,
            enqueued_at=accepted.accepted_at, started_at=None, finished_at=None,
            last_attempted_at=None, args=payload["args"], kwargs=payload["kwargs"],
            backend=self.alias, errors=[], worker_ids=[])
        transaction.on_commit(lambda: self._announce(scope, result), using=self.database)
        return result

    def _announce(self, scope: str, result: TaskResult) -> None:
        """``task_enqueued`` in the scope the task was accepted into, as the worker-side
        signals are sent in the Work's: the commit may come after the caller's ``with
        tasks.scope(...)`` block closed, and a receiver's ``refresh()`` then looked in another
        scope and answered TaskResultDoesNotExist."""
        with scoping.scope(scope):
            results.notify(signals.task_enqueued, type(self), result)

    # ------------------------------------------------------------------ results
    def get_result(self, result_id: str) -> TaskResult:
        try:
            work_id = uuid.UUID(str(result_id))
        except ValueError:
            raise TaskResultDoesNotExist(result_id) from None
        for scope in self._read_scopes():
            found = results.read(scope, work_id, using=self.database)
            if found is None:
                continue
            info = found[0]
            task = task_for_name(info.work_name)
            if task is None:
                break  # plain Work, or a task whose code is gone: not a result of this backend
            return results.build(task, self.alias, *found)
        raise TaskResultDoesNotExist(result_id)

    def _read_scopes(self) -> list[str]:
        first = scoping.ambient() or self.default_scope
        with _SCOPES_LOCK:
            declared = _DECLARED_SCOPES.get(self.alias, set()) - {first}
        return [first, *sorted(declared)]


#: The scopes tasks declare in code (``scope`` options, TASK_OPTIONS), per backend alias, for
#: the whole process: Django keeps one backend instance per thread, and a task is validated
#: (its scope declared) in the thread that imports it, so per-instance sets left every other
#: thread's get_result() blind to them.
_DECLARED_SCOPES: dict[str, set[str]] = {}
_SCOPES_LOCK = threading.Lock()


def _declare_scopes(alias: str, scopes) -> None:
    with _SCOPES_LOCK:
        _DECLARED_SCOPES.setdefault(alias, set()).update(scopes)


def _refuse_manual_transaction(alias: str) -> None:
    """DS274 before anything is written when the store's connection is under manual transaction
    management (autocommit off, outside ``atomic()``). The Work would join the caller's open
    transaction, but ``task_enqueued`` cannot wait for a commit Django does not manage
    (``on_commit()`` raises there): enqueue() raised after writing, and a caller that committed
    anyway had a task it had been told failed."""
    conn = connections[alias]
    if not conn.in_atomic_block and not conn.get_autocommit():
        raise EnqueueInManualTransaction(
            "enqueue() under manual transaction management (autocommit off, outside "
            "atomic()): the task cannot be tied to a commit Django does not manage",
            database=alias)


#: Module paths whose module attribute was seen to be a durable task of the same function.
_FINDABLE: dict[str, Any] = {}


def _check_findable(task: Task) -> None:
    """A worker finds a task by its module path (definitions.py): the module attribute it names
    must be a durable task of the same function. Checked at enqueue, when the task's module has
    been imported: ``send = task(_send)`` binds the task under another name than its function's,
    and a module-level task of a non-durable backend enqueued through ``using(backend=...)`` is
    not one a worker accepts; both were accepted and then suspended (unknown_definition) by every
    worker without an attempt."""
    path = task.module_path
    if _FINDABLE.get(path) is task.func:
        return
    found = task_for_name(path)
    if found is None or found.func is not task.func:
        raise InvalidTask(f"durable task {path}: its module path does not name this task (a "
                          "worker finds a task by its module path): define it with @task on a "
                          "module-level function bound under the function's own name, on a "
                          "durable backend")
    _FINDABLE[path] = task.func


def _check_task_options(alias: str, per_task: dict) -> None:
    """Every TASK_OPTIONS entry is a dict of known option names: a misspelt key (``safty``)
    would otherwise be ignored, and the task would run with the backend's default safety."""
    for path, values in per_task.items():
        if not isinstance(path, str) or not isinstance(values, dict):
            raise InvalidTaskOptions("OPTIONS['TASK_OPTIONS'] must map module paths to dicts",
                                     backend=alias, task=repr(path)[:200])
        unknown = set(values) - set(OPTION_NAMES)
        if unknown:
            raise InvalidTaskOptions("unknown durable task options in OPTIONS['TASK_OPTIONS']",
                                     backend=alias, task=path,
                                     unknown=sorted(repr(k) for k in unknown),
                                     known=list(OPTION_NAMES))
        _check_task_values(alias, path, values)


def _check_task_values(alias: str, path: str, values: dict) -> None:
    """The values of one TASK_OPTIONS entry, checked when the backend is built: otherwise a bad
    one (``version=5``, ``safety="careful"``) was found only at the task's first enqueue, and a
    worker meeting Work the task had before the change suspended it (unknown definition)."""
    def bad(key: str, why: str) -> InvalidTaskOptions:
        return InvalidTaskOptions(f"OPTIONS['TASK_OPTIONS'][{path!r}]['{key}'] {why}",
                                  backend=alias, task=path, got=repr(values[key])[:200])

    _check_values(values, ("version", "safety", "policy", "deadline_after"), bad,
                  none_is_unset=True)
    if values.get("scope") is not None:
        try:
            validate_scope_id(values["scope"])
        except InvalidScope as exc:
            raise bad("scope", f"is not a scope id ({exc.code}: {exc.message})") from None


def _check_queues(alias: str, queues: set) -> None:
    """Every name in QUEUES is a queue name a Work can have: otherwise each task on it was
    refused only at its first enqueue (DS115), long after the settings were read."""
    for queue in queues:
        try:
            repeated_identifier(queue, "queue")
        except InvalidIdentifier as exc:
            raise InvalidTaskOptions(f"QUEUES holds a name that is not a valid queue name "
                                     f"({exc.message})", backend=alias,
                                     got=repr(queue)[:200]) from None


def _check_defaults(alias: str, options: dict) -> None:
    """The backend-wide defaults, checked once here instead of at every task's first use."""
    def bad(key: str, why: str) -> InvalidTaskOptions:
        return InvalidTaskOptions(f"OPTIONS['{key}'] {why}", backend=alias,
                                  got=repr(options[key])[:200])

    scope = options.get("SCOPE")
    if scope is not None:
        # An empty SCOPE (an unset environment variable) fell through to DEFAULT_SCOPE or
        # "default": a tenant's tasks were accepted into another scope.
        try:
            validate_scope_id(scope)
        except InvalidScope as exc:
            raise bad("SCOPE", f"is not a scope id ({exc.code}: {exc.message})") from None
    database = options.get("DATABASE")
    if database is not None and (not isinstance(database, str)
                                 or database not in connections.settings):
        # otherwise the first enqueue failed with Django's bare ConnectionDoesNotExist
        raise bad("DATABASE", "must name a database alias of DATABASES")
    _check_values(options, ("VERSION", "SAFETY", "POLICY", "DEADLINE_AFTER"), bad,
                  none_is_unset=False)


def _check_values(values: dict, keys: tuple[str, str, str, str], bad, *,
                  none_is_unset: bool) -> None:
    """The option values the backend-wide defaults and each TASK_OPTIONS entry share, under
    their own spellings (``keys``: version, safety, policy, deadline_after). A per-task None
    means "the backend's default" (``none_is_unset``); a backend-wide VERSION or SAFETY given
    as None is refused."""
    version_key, safety_key, policy_key, after_key = keys

    def given(key: str) -> bool:
        return values.get(key) is not None if none_is_unset else key in values

    if given(safety_key):
        try:
            ProviderSafety(values[safety_key])
        except ValueError:
            raise bad(safety_key, "must be 'idempotent' or 'reconcile_before_retry'") from None
    version = values.get(version_key)
    if given(version_key) and (not isinstance(version, str) or not version):
        raise bad(version_key, "must be a non-empty string")
    if given(version_key):
        try:
            repeated_identifier(version, "version")
        except InvalidIdentifier as exc:
            raise bad(version_key, f"is not a Work version ({exc.code}: {exc.message})"
                      ) from None
    policy = values.get(policy_key)
    if policy is not None and not isinstance(policy, ExecutionPolicy):
        raise bad(policy_key, "must be an ExecutionPolicy")
    after = values.get(after_key)
    if after is not None and (not isinstance(after, timedelta) or after <= timedelta(0)):
        raise bad(after_key, "must be a positive timedelta")


def _database_now(alias: str):
    from durable_schedule.store.transactions import connection

    with connection(alias).cursor() as cur:
        cur.execute("SELECT durable_schedule_clock('clock')")
        return cur.fetchone()[0]
