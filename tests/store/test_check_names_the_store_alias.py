"""``manage.py check`` on a store that lives on another alias than ``default``
(``DURABLE_SCHEDULE['DATABASE']``) names the command that migrates *that* database: a plain
``manage.py migrate`` migrates ``default`` only, and E001 kept answering "Run `manage.py
migrate`" after it had run (docs/protocol/storage.md "Migrations and compatibility")."""

from __future__ import annotations

import pytest
from django.db import connections

from durable_schedule.checks import check_store

pytestmark = pytest.mark.django_db(databases=["default", "other"])


@pytest.fixture(autouse=True)
def _close_other():
    yield
    connections["other"].close()  # else the test database cannot be dropped at the end


def _unmigrate(alias: str) -> None:
    # In the alias's test transaction (rolled back): the store row's table is what E001 looks for.
    with connections[alias].cursor() as cur:
        cur.execute("alter table durable_schedule_store rename to durable_gone_store")


def test_e001__on_another_alias_names_migrate_database(settings):
    settings.DURABLE_SCHEDULE = {"DATABASE": "other"}
    _unmigrate("other")
    (error,) = check_store()
    assert error.id == "durable_schedule.E001"
    assert error.hint == "Run `manage.py migrate --database other`."


def test_e001__on_default_keeps_the_plain_command(settings):
    _unmigrate("default")
    (error,) = check_store()
    assert error.hint == "Run `manage.py migrate`."
