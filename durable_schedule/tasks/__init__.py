"""Django's Tasks framework on the durable Work runtime (docs/tasks.md).

    TASKS = {"default": {"BACKEND": "durable_schedule.tasks.DurableBackend"}}

This module is the public API of the backend; it only re-exports documented names.
"""

from durable_schedule.tasks.backend import DurableBackend
from durable_schedule.tasks.definitions import reconciler, resolve_definition
from durable_schedule.tasks.options import DurableTask, options
from durable_schedule.tasks.results import DurableTaskContext
from durable_schedule.tasks.scoping import scope
from durable_schedule.tasks.targets import target
from durable_schedule.work import registry as _registry

# A worker resolves task Work by module path (durable_schedule/tasks/definitions.py).
_registry.add_resolver(resolve_definition)

__all__ = [
    "DurableBackend",
    "DurableTask",
    "DurableTaskContext",
    "options",
    "reconciler",
    "scope",
    "target",
]
