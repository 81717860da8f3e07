"""Periodic tasks: a task as the target of a schedule (docs/tasks.md "Periodic tasks").

    schedules.create("main", "nightly-report", schedules.Every(timedelta(days=1)),
                     tasks.target(send_report, "weekly", recipients=["ops"]))

The target is the same immutable snapshot any Work target is (name, version, payload, policy,
deadline, and the task's ``queue_name`` and ``priority``), so each due instant becomes exactly
one task run, with the schedule protocol's guarantees, on the task's queue at its priority; its
result is readable with ``task.get_result(id)`` for the Work id the occurrence links to.
"""

from __future__ import annotations

from typing import Any

from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.tasks import arguments
from durable_schedule.tasks.compat import InvalidTask, Task
from durable_schedule.tasks.definitions import definition_for
from durable_schedule.work.target import WorkTarget


def target(task: Task, /, *args: Any, **kwargs: Any) -> WorkTarget:
    """The schedule target that runs ``task(*args, **kwargs)`` at every due instant."""
    if not isinstance(task, Task):
        raise InvalidTask(f"target() takes a task, not {type(task).__name__}")
    if task.run_after is not None:
        # run_after is one absolute instant; a schedule's target runs at every due instant, so
        # there is no single meaning to honour (before it? after it? each run delayed?).
        # Refused instead of silently dropped: the schedule's spec says when a run is due.
        raise InvalidTaskOptions(f"task {task.module_path} has run_after set; a schedule "
                                 "target runs at the schedule's due instants: drop "
                                 ".using(run_after=...) and use the spec or start_at",
                                 task=task.module_path)
    backend = task.get_backend()
    if not hasattr(backend, "runnable_options"):
        raise InvalidTask(f"task {task.module_path} does not use the durable backend")
    resolved = backend.runnable_options(task)
    arguments.fit(task, args, kwargs)
    definition = definition_for(task, resolved)
    # The task's routing, as enqueue() uses it: every occurrence's Work runs on the task's
    # queue at its priority (``task.using(queue_name=..., priority=...)`` overrides both).
    made = definition.target(payload=arguments.to_json(args, kwargs),
                             deadline_after=resolved.deadline_after,
                             queue=task.queue_name, priority=task.priority)
    if resolved.scope is not None:
        # Not part of the snapshot (its JSON, its fingerprint): the schedule's scope is where
        # every occurrence's Work goes, so a schedule given this target in another scope is
        # refused (DS272, schedules.validation.target) instead of running the task there.
        object.__setattr__(made, "fixed_scope", resolved.scope)
    return made
