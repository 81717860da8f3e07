"""Per-task durable options and the Task class the backend hands to ``@task``.

A task is one Work definition (docs/tasks.md "Options"): its name is the task's module path, its
version, provider safety, execution policy, deadline and scope are options. Django 6.1 and the
django-tasks backport (0.12) forward extra ``@task(...)`` keyword arguments to the backend's
``task_class``, so there they are written in the decorator; on Django 6.0 the decorator takes no
extra arguments, so the same options come from the backend's ``OPTIONS["TASK_OPTIONS"]`` (keyed
by module path) or from the :func:`options` decorator placed above ``@task``. One rule decides,
in this order: a value on the task, then ``TASK_OPTIONS`` for its module path, then the
backend's defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from durable_schedule.evaluation.policy import ExecutionPolicy
from durable_schedule.tasks.compat import InvalidTask, Task
from durable_schedule.work.safety import ProviderSafety

OPTION_NAMES = ("version", "safety", "policy", "scope", "deadline_after")


@dataclass(frozen=True, slots=True, kw_only=True)
class DurableTask(Task):
    """A Django Task with the durable options (None: take it from TASK_OPTIONS or defaults)."""

    version: str | None = None
    safety: ProviderSafety | str | None = None
    policy: ExecutionPolicy | None = None
    scope: str | None = None
    deadline_after: timedelta | None = None


@dataclass(frozen=True)
class ResolvedOptions:
    """The options one task runs with, after the precedence rule."""

    version: str
    safety: ProviderSafety
    policy: ExecutionPolicy | None
    scope: str | None
    deadline_after: timedelta | None


def options(**values: Any):
    """Decorator for Django 6.0 (any version works), placed above ``@task``::

        @options(safety="reconcile_before_retry", version="v2")
        @task
        def charge(order_id): ...
    """
    unknown = set(values) - set(OPTION_NAMES)
    if unknown:
        raise InvalidTask(f"unknown durable task options {sorted(unknown)}; "
                          f"known: {', '.join(OPTION_NAMES)}")

    def apply(task: Task) -> DurableTask:
        if not isinstance(task, DurableTask):
            raise InvalidTask("@options goes above @task, on a task of the durable backend")
        return dataclasses.replace(task, **values)

    return apply


def resolve(task: Task, backend_options: dict[str, Any]) -> ResolvedOptions:
    """The options of ``task`` under the backend's ``OPTIONS`` (validated by the backend)."""
    per_task = backend_options.get("TASK_OPTIONS", {}).get(task.module_path, {})

    def pick(name: str, default: Any) -> Any:
        value = getattr(task, name, None)
        if value is None:
            value = per_task.get(name)
        return default if value is None else value

    return ResolvedOptions(
        version=pick("version", backend_options.get("VERSION", "v1")),
        safety=ProviderSafety(pick("safety", backend_options.get("SAFETY", "idempotent"))),
        policy=pick("policy", backend_options.get("POLICY")),
        scope=pick("scope", None),
        deadline_after=pick("deadline_after", backend_options.get("DEADLINE_AFTER")),
    )
