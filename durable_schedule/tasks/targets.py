"""Periodic tasks: a task as the target of a schedule (docs/tasks.md "Periodic tasks").

    schedules.create("main", "nightly-report", schedules.Every(timedelta(days=1)),
                     tasks.target(send_report, "weekly", recipients=["ops"]))

The target is the same immutable snapshot any Work target is (name, version, payload, policy,
deadline), so each due instant becomes exactly one task run, with the schedule protocol's
guarantees; its result is readable with ``task.get_result(id)`` for the Work id the occurrence
links to.
"""

from __future__ import annotations

from typing import Any

from durable_schedule.tasks import arguments
from durable_schedule.tasks.compat import InvalidTask, Task
from durable_schedule.tasks.definitions import definition_for
from durable_schedule.work.target import WorkTarget


def target(task: Task, /, *args: Any, **kwargs: Any) -> WorkTarget:
    """The schedule target that runs ``task(*args, **kwargs)`` at every due instant."""
    if not isinstance(task, Task):
        raise InvalidTask(f"target() takes a task, not {type(task).__name__}")
    backend = task.get_backend()
    if not hasattr(backend, "runnable_options"):
        raise InvalidTask(f"task {task.module_path} does not use the durable backend")
    resolved = backend.runnable_options(task)
    definition = definition_for(task, resolved)
    return definition.target(payload=arguments.to_json(args, kwargs),
                             deadline_after=resolved.deadline_after)
