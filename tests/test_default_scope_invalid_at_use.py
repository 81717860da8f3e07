"""An invalid ``DURABLE_SCHEDULE['DEFAULT_SCOPE']`` is DS411 wherever it is used, and the
settings check's E005 (DS411) is what ``manage.py check`` shows (docs/getting-started.md "One
scope for a single-tenant project").

Before: a durable tasks backend without ``OPTIONS["SCOPE"]`` validated DEFAULT_SCOPE when it
was built, so Django's task checks (which build every backend) raised ``InvalidScope`` (DS301)
out of ``run_checks()`` and the E005 message never showed; an empty DEFAULT_SCOPE (``""``, an
unset environment variable) was read as "no default" by the backend, which then accepted the
tasks into the scope ``"default"``; and a public call without a scope passed the invalid default
on, to fail as DS301 naming no setting."""

from __future__ import annotations

import pytest
from django.core import checks

from durable_schedule import schedules, work
from durable_schedule.errors import InvalidDefaultScope
from durable_schedule.tasks import DurableBackend

BACKEND = {"BACKEND": "durable_schedule.tasks.DurableBackend", "OPTIONS": {}}
INVALID = [" tenant", "", "a\u200bb", 5, "x" * 201]


@pytest.mark.parametrize("value", INVALID)
def test_check__an_invalid_default_scope_is_e005_with_a_scope_less_tasks_backend(
        db, settings, value):
    settings.DURABLE_SCHEDULE = {"DEFAULT_SCOPE": value}
    settings.TASKS = {"default": BACKEND}
    found = [m for m in checks.run_checks() if m.id == "durable_schedule.E005"]
    assert len(found) == 1 and "DS411" in found[0].msg


@pytest.mark.parametrize("value", INVALID)
def test_backend__an_invalid_default_scope_is_ds411_where_the_scope_is_needed(settings, value):
    settings.DURABLE_SCHEDULE = {"DEFAULT_SCOPE": value}
    backend = DurableBackend("default", BACKEND)
    with pytest.raises(InvalidDefaultScope, match="DS411"):
        backend.default_scope  # noqa: B018 -- the read is what raises


def test_backend__a_valid_default_scope_or_none_still_applies(settings):
    settings.DURABLE_SCHEDULE = {"DEFAULT_SCOPE": "tenant-1"}
    assert DurableBackend("default", BACKEND).default_scope == "tenant-1"
    settings.DURABLE_SCHEDULE = {}
    assert DurableBackend("default", BACKEND).default_scope == "default"


@pytest.mark.parametrize("value", INVALID)
def test_calls__without_a_scope_and_an_invalid_default_are_ds411(settings, value):
    settings.DURABLE_SCHEDULE = {"DEFAULT_SCOPE": value}
    with pytest.raises(InvalidDefaultScope, match="DEFAULT_SCOPE"):
        schedules.get(schedule_id="nightly")
    with pytest.raises(InvalidDefaultScope, match="DEFAULT_SCOPE"):
        work.list()
