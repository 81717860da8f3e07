"""A store on a database alias other than "default" (docs/api.md "Settings": ``DATABASE``).

The alias ``store`` is a real second database on the test server (not a mirror of "default"),
migrated with ``migrate --database store``, so a read that goes to the "default" connection
finds nothing there: a part that ignores DURABLE_SCHEDULE['DATABASE'] shows up as missing rows
or as a scope set on one connection and read on another. The alias ``bare`` is a third, empty
database: a store alias nobody migrated yet.
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
BARE = "bare"
DATABASES = ["default", ALIAS]


def _server_url(cfg: dict, name: str) -> str:
    auth = cfg["USER"] + (f":{cfg['PASSWORD']}" if cfg["PASSWORD"] else "")
    return f"postgresql://{auth}@{cfg['HOST']}:{cfg['PORT']}/{name}"


def _server(sql: str) -> None:
    with psycopg.connect(_server_url(connections["default"].settings_dict, "postgres"),
                         autocommit=True) as admin:
        admin.execute(sql)


def _add_alias(alias: str) -> str:
    """Create an empty database and register it as ``alias``; returns its name."""
    name = f"test_durable_{alias}_{os.getpid()}"
    _server(f'DROP DATABASE IF EXISTS "{name}"')
    _server(f'CREATE DATABASE "{name}"')
    cfg = {**django_settings.DATABASES["default"], "NAME": name, "TEST": {"NAME": name}}
    django_settings.DATABASES[alias] = cfg
    # connections.settings is settings.DATABASES itself once configured: fill in the defaults.
    connections.settings[alias] = connections.configure_settings(
        {"default": dict(connections["default"].settings_dict), alias: cfg})[alias]
    return name


def _remove_alias(alias: str, name: str) -> None:
    connections[alias].close()
    connections.settings.pop(alias, None)
    django_settings.DATABASES.pop(alias, None)
    _server(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", autouse=True)
def store_alias(django_db_setup, django_db_blocker):
    """Create, register and migrate the second database once per session; drop it at the end.
    Autouse and session-wide: pytest-django validates a test's ``databases`` before any
    function fixture runs."""
    with django_db_blocker.unblock():
        names = {ALIAS: _add_alias(ALIAS), BARE: _add_alias(BARE)}
        call_command("migrate", database=ALIAS, verbosity=0)
    yield ALIAS
    with django_db_blocker.unblock():
        for alias, name in names.items():
            _remove_alias(alias, name)


@pytest.fixture
def on_store(store_alias, settings):
    """DURABLE_SCHEDULE['DATABASE'] = "store" for one test; both stores emptied after. Tests
    mark themselves ``django_db(transaction=True, databases=DATABASES)``: the API commits."""
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}), "DATABASE": ALIAS}
    yield ALIAS
    reset_store(ALIAS)
    reset_store("default")
    connections[ALIAS].close()
