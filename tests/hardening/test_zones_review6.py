"""Zone names whose rules depend on the host ("localtime", "posixrules", the "posix/" and
"right/" trees) are refused for a new generation with DS126 and change nothing, while a
schedule already stored under such a name keeps evaluating, previewing and re-binding
(docs/schedules.md "Cron": history is never reinterpreted)."""

from __future__ import annotations

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from durable_schedule.errors import UnknownTimeZone
from durable_schedule.evaluation.cron import zones
from durable_schedule.schedules import declared, validation
from tests.conftest import T0
from tests.schedules.conftest import HOUR, SECOND, run_pass, works

pytestmark = pytest.mark.django_db
A = "acme"
HOST_NAMES = ["localtime", "posixrules", "right/UTC", "posix/Europe/Berlin"]


@pytest.fixture
def target():
    return schedule_targets.report.target(payload={"report": "nightly"})


@pytest.mark.parametrize("name", HOST_NAMES)
def test_create__a_host_dependent_zone_is_ds126_and_stores_nothing(clock, target, name):
    spec = schedules.Cron("0 * * * *", name)  # constructing it still works (stored specs load)
    with pytest.raises(UnknownTimeZone) as caught:
        schedules.create(A, "s", spec, target)
    assert caught.value.code == "DS126"
    assert caught.value.context["reason"] == "host_dependent_zone"
    assert schedules.list(A) == []


@pytest.mark.parametrize("name", HOST_NAMES)
def test_update_and_declare__a_host_dependent_zone_is_ds126(clock, target, name):
    info = schedules.create(A, "s", schedules.Cron("0 * * * *", "UTC"), target)
    with pytest.raises(UnknownTimeZone, match="DS126"):
        schedules.update(A, "s", expected_revision=info.revision,
                         spec=schedules.Cron("0 * * * *", name))
    assert schedules.get(A, "s").generation == 1
    with pytest.raises(UnknownTimeZone, match="DS126"):
        declared.declare("d", schedules.Cron("0 * * * *", name), target=target, scope=A)


def test_portable_names_are_accepted(clock, target):
    for i, name in enumerate(["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires",
                              "Etc/GMT+5"]):
        schedules.create(A, f"s{i}", schedules.Cron("0 * * * *", name), target)
    assert len(schedules.list(A)) == 4


def test_a_stored_localtime_schedule_stays_evaluable(clock, target, monkeypatch):
    # A schedule accepted before the refusal existed: bypass the acceptance check only.
    monkeypatch.setattr(validation, "require_portable", lambda name: None)
    schedules.create(A, "old", schedules.Cron("0 * * * *", "localtime"), target)
    monkeypatch.undo()
    with pytest.raises(UnknownTimeZone):
        validation.spec(schedules.Cron("0 * * * *", "localtime"))  # the check is back
    assert schedules.get(A, "old").spec.tz == "localtime"
    stored = schedules.get(A, "old").spec
    assert len(schedules.next_instants(stored, T0, 2)) == 2
    passed = run_pass(clock, T0 + HOUR + SECOND)
    got = schedules.get(A, "old")
    assert len(works(A)) == 1, (passed, got.state, got.suspension_reason)
    # Re-binding the stored spec (the tz_rules_changed repair) is not a new zone choice.
    info = schedules.get(A, "old")
    after = schedules.update(A, "old", expected_revision=info.revision)
    assert after.generation == info.generation + 1 and after.spec.tz == "localtime"


def test_host_dependent__is_a_pure_name_rule():
    assert all(zones.host_dependent(n) for n in HOST_NAMES)
    assert not any(zones.host_dependent(n) for n in ["UTC", "Europe/Berlin", "Etc/UTC",
                                                     "America/Indiana/Knox"])
