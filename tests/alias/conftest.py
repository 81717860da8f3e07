"""A store on a database alias other than "default" (docs/api.md "Settings": ``DATABASE``).

The alias ``store`` is a real second database on the test server (not a mirror of "default"),
migrated with ``migrate --database store``, so a read that goes to the "default" connection
finds nothing there: a part that ignores DURABLE_SCHEDULE['DATABASE'] shows up as missing rows
or as a scope set on one connection and read on another.
"""

from __future__ import annotations

import os

import psycopg
import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connections

from durable_schedule.testing import reset_store

ALIAS = "store"
DATABASES = ["default", ALIAS]


def _server_url(cfg: dict, name: str) -> str:
    auth = cfg["USER"] + (f":{cfg['PASSWORD']}" if cfg["PASSWORD"] else "")
    return f"postgresql://{auth}@{cfg['HOST']}:{cfg['PORT']}/{name}"


@pytest.fixture(scope="session", autouse=True)
def store_alias(django_db_setup, django_db_blocker):
    """Create, register and migrate the second database once per session; drop it at the end."""
    default = connections["default"].settings_dict
    name = f"test_durable_store_{os.getpid()}"
    with psycopg.connect(_server_url(default, "postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    cfg = {**django_settings.DATABASES["default"], "NAME": name, "TEST": {"NAME": name}}
    django_settings.DATABASES[ALIAS] = cfg
    connections.settings[ALIAS] = connections.configure_settings(
        {"default": dict(default), ALIAS: cfg})[ALIAS]
    with django_db_blocker.unblock():
        call_command("migrate", database=ALIAS, verbosity=0)
    yield ALIAS
    with django_db_blocker.unblock():
        connections[ALIAS].close()
    # connections.settings is settings.DATABASES itself: one removal takes it from both.
    connections.settings.pop(ALIAS, None)
    django_settings.DATABASES.pop(ALIAS, None)
    with psycopg.connect(_server_url(default, "postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def on_store(store_alias, settings):
    """DURABLE_SCHEDULE['DATABASE'] = "store" for one test; both stores emptied after. Tests
    mark themselves ``django_db(transaction=True, databases=DATABASES)``: the API commits."""
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}), "DATABASE": ALIAS}
    yield ALIAS
    reset_store(ALIAS)
    reset_store("default")
    connections[ALIAS].close()
