"""A project's own subclass of the durable backend (tests/tasks/test_subclassed_backend.py)."""

from durable_schedule.tasks import DurableBackend


class ProjectBackend(DurableBackend):
    """Adds nothing: a project subclasses to add its own checks or defaults."""
