"""A project's subclass of the durable tasks backend (docs/tasks.md; apps._is_durable_backend
accepts one) holds a store on its ``OPTIONS["DATABASE"]`` as the backend itself does. The
store checks and the migrate hooks listed the aliases of ``BACKEND`` paths equal to the
package's own only, so an unmigrated alias behind ``myproject.tasks.Backend`` was no E001 at
``manage.py check`` (DS402 at the first ``enqueue`` instead) and its migrate skipped the role
handling."""

from __future__ import annotations

import pytest

from durable_schedule import checks
from tests.alias.conftest import BARE

pytestmark = pytest.mark.django_db(databases=["default", BARE])


def test_a_subclassed_backend_alias_is_a_store_alias_and_checked(settings):
    settings.TASKS = {**settings.TASKS, "tenant": {
        "BACKEND": "tests.tasks.custom_backend.ProjectBackend",
        "OPTIONS": {"SCOPE": "demo", "DATABASE": BARE}}}
    assert BARE in checks.store_aliases()
    [error] = checks.check_store()
    assert error.id == "durable_schedule.E001" and "DATABASES['bare']" in error.msg


def test_another_backend_naming_an_alias_does_not_make_it_a_store_alias(settings):
    from durable_schedule.tasks.compat import FRAMEWORK

    settings.TASKS = {**settings.TASKS, "other": {
        "BACKEND": f"{FRAMEWORK}.backends.dummy.DummyBackend",
        "OPTIONS": {"DATABASE": BARE}}}
    assert BARE not in checks.store_aliases()
