"""``operations.recovery.release_all(using=...)`` read the suspended schedules on ``using`` but
released each through ``schedules.release_after_recovery``, which runs on the store's alias
(DURABLE_SCHEDULE['DATABASE']) only: with ``using`` another alias, the list came from one
database and the releases went to another (a same-named schedule there, or a DS error per row
while the schedule asked for stayed suspended). An alias the release cannot reach is now
refused (DS406) before anything is read or written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connections

from durable_schedule import schedules, work
from durable_schedule.errors import InvalidArgument
from durable_schedule.operations.recovery import release_all
from durable_schedule.testing import ControlledClock
from durable_schedule.work import registry
from tests.alias.conftest import ALIAS, DATABASES

pytestmark = pytest.mark.django_db(transaction=True, databases=DATABASES)


def _state(alias: str) -> str:
    with connections[alias].cursor() as cur:
        cur.execute("select state || ':' || coalesce(suspension_reason, '') "
                    "from durable_schedule_definition")
        return cur.fetchone()[0]


@pytest.fixture
def suspended_on_store(on_store, settings):
    """A schedule on the store alias suspended for runtime_epoch_mismatch; afterwards the
    project's store setting is "default" again."""
    definition = registry.define("alias_tests.rel", "v1", safety=work.ProviderSafety.IDEMPOTENT)
    try:
        schedules.create("t", "s", schedules.After(timedelta(minutes=1)),
                         target=definition.target(payload={}))
        call_command("durable_recover", "--bump-epoch", stdout=None)
        clock = ControlledClock()
        clock.set(schedules.get("t", "s").next_nominal_utc + timedelta(seconds=1))
        try:
            call_command("process_schedules", "--max-schedules", "5")
        finally:
            clock.restore()
        assert _state(ALIAS) == "suspended:runtime_epoch_mismatch"
        settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "DATABASE": "default"}
        yield
    finally:
        registry._unregister(definition.name, definition.version)


def test_release_all_on_an_alias_it_cannot_release_on_is_refused(suspended_on_store):
    with pytest.raises(InvalidArgument) as caught:
        release_all(actor="ops", dry_run=False, using=ALIAS)
    assert caught.value.code == "DS406"
    assert _state(ALIAS) == "suspended:runtime_epoch_mismatch"


def test_release_all_on_the_store_alias_releases(suspended_on_store, settings):
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "DATABASE": ALIAS}
    [outcome] = release_all(actor="ops", dry_run=False, using=ALIAS)
    assert outcome.released, outcome
    assert _state(ALIAS) == "active:"
