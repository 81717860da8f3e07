"""System checks and durable_status name the store's alias and the command that migrates it
(docs/operations.md "A store on its own database alias"): a plain ``manage.py migrate`` migrates
"default" only, so "run manage.py migrate" sent an operator to a command that changes nothing."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from durable_schedule import checks
from tests.alias.conftest import BARE

pytestmark = pytest.mark.django_db(databases=["default", BARE])


@pytest.fixture
def on_bare(settings):
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}), "DATABASE": BARE}
    return BARE


def test_e001_names_the_alias_and_its_migrate_command(on_bare):
    [error] = [m for m in checks.check_store() if m.id == "durable_schedule.E001"]
    assert "DATABASES['bare']" in error.msg
    assert error.hint == "Run `manage.py migrate --database bare`."


def test_durable_status_says_how_to_migrate_the_alias(on_bare):
    out = StringIO()
    with pytest.raises(SystemExit):
        call_command("durable_status", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert "manage.py migrate --database bare" in " ".join(report["problems"]), report
    assert report["database"] == BARE


def test_status_of_another_alias_names_it():
    """collect(using=...) with the store on "default": the report is about that alias, and so
    is the command it tells to run."""
    from durable_schedule.operations.status import collect

    report = collect(using=BARE)
    assert report.database == BARE
    assert report.problems == ["DS402: the store is not migrated "
                               "(run manage.py migrate --database bare)"]


def test_unreachable_store_warnings_name_the_alias(on_bare, monkeypatch):
    from django.db import connections

    from durable_schedule.operations import deploy_checks

    conn = connections[BARE]
    conn.close()
    monkeypatch.setitem(conn.settings_dict, "PORT", "1")  # nothing listens there
    try:
        [w004] = checks.check_store()
        [w013] = [m for m in deploy_checks.check_deployment()
                  if m.id == "durable_schedule.W013"]
    finally:
        conn.close()
    assert w004.id == "durable_schedule.W004"
    for warning in (w004, w013):
        assert "DATABASES['bare']" in warning.msg, warning.msg


@pytest.mark.parametrize("argv", [["manage.py", "migrate"],
                                  ["manage.py", "migrate", "--database", "default"],
                                  ["manage.py", "migrate", "--database=default"]])
def test_migrating_another_alias_still_says_the_store_is_not_migrated(on_bare, monkeypatch,
                                                                        argv):
    """A plain migrate does not migrate a store on its own alias: silence here let an operator
    believe the deploy's migrate step had built it."""
    monkeypatch.setattr("sys.argv", argv)
    [warning] = checks.check_store()
    assert warning.level == 30 and warning.id == "durable_schedule.E001"
    assert warning.hint == "Run `manage.py migrate --database bare`."


@pytest.mark.parametrize("argv", [["manage.py", "migrate", "--database", "bare"],
                                  ["manage.py", "migrate", "--database=bare"],
                                  ["manage.py", "migrate", "durable_schedule",
                                   "--database", "bare"]])
def test_migrating_the_store_alias_says_nothing_of_what_it_cures(on_bare, monkeypatch, argv):
    monkeypatch.setattr("sys.argv", argv)
    assert checks.check_store() == []


def test_a_tasks_backend_alias_that_is_not_migrated_is_an_e001(settings):
    """A durable tasks backend whose OPTIONS["DATABASE"] names an unmigrated alias: manage.py
    check says so, naming that alias, instead of the first enqueue failing with DS402."""
    settings.TASKS = {**settings.TASKS, "tenant": {
        "BACKEND": "durable_schedule.tasks.DurableBackend",
        "OPTIONS": {"SCOPE": "demo", "DATABASE": BARE}}}
    [error] = checks.check_store()
    assert error.id == "durable_schedule.E001"
    assert "DATABASES['bare']" in error.msg
    assert error.hint == "Run `manage.py migrate --database bare`."
