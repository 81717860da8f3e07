"""A worker resolves task Work by module path through the resolver ``durable_schedule.tasks``
registers when it is imported; ``AppConfig.ready`` imports it when ``TASKS`` holds a durable
backend (docs/tasks.md "Workers"). Before, "durable" meant a ``BACKEND`` path starting with
``durable_schedule.tasks``: with a project's subclass (``myproject.tasks.Backend``) a fresh
worker, which never touched ``task_backends``, registered no resolver and suspended every task's
Work as an unknown definition."""

from __future__ import annotations

import sys

import pytest
from django.test import override_settings

from durable_schedule.apps import _load_tasks_backend
from durable_schedule.tasks.definitions import resolve_definition
from durable_schedule.work import registry


@pytest.fixture
def fresh_process():
    """As in a process that has not imported ``durable_schedule.tasks`` (the package only: its
    submodules stay, so no class is duplicated); restored afterwards."""
    package = sys.modules.pop("durable_schedule.tasks")
    registry._RESOLVERS.remove(resolve_definition)
    yield
    sys.modules["durable_schedule.tasks"] = package
    registry.add_resolver(resolve_definition)


SUBCLASS = {"default": {"BACKEND": "tests.tasks.custom_backend.ProjectBackend",
                        "QUEUES": ["default", "emails"], "OPTIONS": {"SCOPE": "demo"}}}
NOT_DURABLE = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def test_ready__a_subclass_of_the_durable_backend_registers_the_resolver(fresh_process):
    with override_settings(TASKS=SUBCLASS):
        _load_tasks_backend()
    assert resolve_definition in registry._RESOLVERS


@pytest.mark.parametrize("tasks_setting", [NOT_DURABLE, {"default": {"BACKEND": "no.such.Path"}},
                                           {"default": {"BACKEND": 5}}])
def test_ready__other_backends_register_nothing_and_raise_nothing(fresh_process,
                                                                  tasks_setting):
    with override_settings(TASKS=tasks_setting):
        _load_tasks_backend()
    assert resolve_definition not in registry._RESOLVERS
