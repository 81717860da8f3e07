"""The DURABLE_SCHEDULE settings in a wrong shape are a system check error (E005) that names
the setting, never a traceback out of the check framework or out of ``django.setup()``
(docs/api.md "Settings").

Before: a ``DURABLE_SCHEDULE`` that is not a dict raised ``AttributeError: 'list' object has
no attribute 'get'`` from ``AppConfig.ready()`` and from every check; ``DATABASE`` naming no
alias made the store check raise Django's ``ConnectionDoesNotExist`` (a list: ``TypeError``)
and so hid the settings check's own message; ``QUEUES = 5`` raised ``TypeError: 'int' object is
not iterable``; a queue name ``enqueue`` refuses (a zero-width space, surrounding spaces) and a
dict passed the check; ``PREPARE_STATEMENTS = "False"`` passed ``bool()`` at run time and
prepared statements in a process that never ran the checks (a WSGI worker)."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from durable_schedule import apps, conf
from durable_schedule.checks import check_settings, check_store
from durable_schedule.operations.deploy_checks import check_deployment


def _ids(messages) -> list[str]:
    return [m.id for m in messages]


def _durable(messages) -> list[checks.CheckMessage]:
    return [m for m in messages if (m.id or "").startswith("durable_schedule.")]


@pytest.mark.parametrize("value", [None, [], ["LEASE_SECONDS", 30], "LEASE_SECONDS=30", 5])
def test_settings__not_a_dict_is_e005_naming_the_setting(db, settings, value):
    settings.DURABLE_SCHEDULE = value
    found = _durable(checks.run_checks(include_deployment_checks=True))
    errors = [m for m in found if m.id == "durable_schedule.E005"]
    assert len(errors) == 1
    assert "DURABLE_SCHEDULE must be a dict" in errors[0].msg
    assert type(value).__name__ in errors[0].msg
    # The store check has nothing to add about an unreadable setting: no second message.
    assert "durable_schedule.E001" not in _ids(found)


@pytest.mark.parametrize("value", [None, [], "x"])
def test_settings__not_a_dict_does_not_stop_django_setup(settings, value):
    # ready() runs before any check: it leaves the report to E005 instead of raising.
    settings.DURABLE_SCHEDULE = value
    apps._autodiscover_work()


@pytest.mark.parametrize("value", [[], "x"])
def test_settings__not_a_dict_is_a_clear_error_where_a_setting_is_used(settings, value):
    settings.DURABLE_SCHEDULE = value
    with pytest.raises(ImproperlyConfigured, match="DURABLE_SCHEDULE must be a dict"):
        conf.lease_seconds()


@pytest.mark.parametrize("alias", ["nope", ["default"], 5, None])
def test_settings__database_naming_no_alias_is_e005_and_the_store_check_stays_quiet(
        db, settings, alias):
    settings.DURABLE_SCHEDULE = {"DATABASE": alias}
    assert check_store() == []
    assert all(m.id != "durable_schedule.W013" for m in check_deployment())
    (error,) = check_settings()
    assert error.id == "durable_schedule.E005" and "DATABASE" in error.msg


@pytest.mark.parametrize("value", [5, "default", {"emails": 1}, b"emails", ["emails", 5],
                                   ["a\u200bb"], [" emails"], ["x" * 201], [""]])
def test_settings__queues_in_a_wrong_shape_are_e005(settings, value):
    settings.DURABLE_SCHEDULE = {"QUEUES": value}
    (error,) = check_settings()
    assert error.id == "durable_schedule.E005" and "QUEUES" in error.msg


@pytest.mark.parametrize("value", [["emails"], ("emails", "reports"), {"emails"},
                                   frozenset({"x" * 200}), ["caf\u00e9"]])
def test_settings__valid_queue_lists_pass(settings, value):
    settings.DURABLE_SCHEDULE = {"QUEUES": value}
    assert check_settings() == []
    assert conf.queues() == frozenset(value)


@pytest.mark.parametrize("value", ["False", "false", 0, 1, "no"])
def test_settings__prepare_statements_not_a_bool_is_refused_where_it_is_read(settings, value):
    settings.DURABLE_SCHEDULE = {"PREPARE_STATEMENTS": value}
    (error,) = check_settings()
    assert "PREPARE_STATEMENTS" in error.msg
    # A process that never ran the checks must not read "False" as True.
    with pytest.raises(ImproperlyConfigured, match="PREPARE_STATEMENTS"):
        conf.prepare_statements()
