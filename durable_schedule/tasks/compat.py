"""Which Tasks framework this process has: Django's own ``django.tasks`` (Django 6.0 and newer)
or the ``django-tasks`` backport (Django 5.2, the ``tasks`` extra). docs/tasks.md.

Both expose the same classes under slightly different names (the backport's ``InvalidTaskError``
is Django's ``InvalidTask``); everything else in this package imports them from here, so the
backend is written once.
"""

from __future__ import annotations

try:  # Django 6.0+: the framework ships with Django.
    from django.tasks import signals, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist

    FRAMEWORK = "django.tasks"
except ImportError:  # Django 5.2 with the backport.
    try:
        from django_tasks import signals, task_backends
        from django_tasks.backends.base import BaseTaskBackend
        from django_tasks.base import (
            TASK_MAX_PRIORITY,
            TASK_MIN_PRIORITY,
            Task,
            TaskContext,
            TaskError,
            TaskResult,
            TaskResultStatus,
        )
        from django_tasks.exceptions import InvalidTaskError as InvalidTask
        from django_tasks.exceptions import TaskResultDoesNotExist
    except ImportError as exc:  # pragma: no cover - depends on the installed Django
        raise ImportError(
            "durable_schedule.tasks needs Django's Tasks framework: Django 6.0 or newer, or on "
            "Django 5.2 the backport (pip install 'durable-schedule[tasks]')"
        ) from exc

    FRAMEWORK = "django_tasks"

__all__ = [
    "FRAMEWORK",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "signals",
    "task_backends",
]
