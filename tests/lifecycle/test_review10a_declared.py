"""An unchanged declaration creates no generation even when its payload holds a number that
``jsonb`` writes back in another form (an exponent float, a negative zero); a real change of a
number's JSON form is still one new generation. A changed declaration does not lift an
operator's suspension: it is held until an operator repairs the schedule."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.schedules import declared
from tests.lifecycle.test_declared import ANCHOR, touch_target

pytestmark = pytest.mark.django_db(transaction=True)


def declaration(**payload) -> declared.Declaration:
    return declared.Declaration(scope="tenant-a", schedule_id="nightly",
                                spec=schedules.Every(timedelta(hours=1), anchor=ANCHOR),
                                target=touch_target(**payload))


@pytest.mark.parametrize("number", [1e20, -0.0, 1e300, 2.5e-8, 1.0, 10**30])
def test_sync__a_payload_number_jsonb_rewrites_is_unchanged_on_the_next_deploy(
        committed_clock, number):
    assert declared.sync(declared=[declaration(limit=number)]).created
    committed_clock.advance(timedelta(minutes=5))
    again = declared.sync(declared=[declaration(limit=number)])
    assert again.unchanged == [("tenant-a", "nightly")], again.lines()
    assert schedules.get("tenant-a", "nightly").generation == 1


def test_sync__a_number_whose_stored_form_changes_is_one_new_generation(committed_clock):
    declared.sync(declared=[declaration(limit=1)])
    report = declared.sync(declared=[declaration(limit=1.0)])  # jsonb keeps 1 and 1.0 apart
    assert report.updated == [("tenant-a", "nightly", ["target"])]
    assert declared.sync(declared=[declaration(limit=1.0)]).unchanged
    assert declared.sync(declared=[declaration(limit=True)]).updated  # true is not 1
    info = schedules.get("tenant-a", "nightly")
    assert (info.generation, info.target_json["payload"]) == (3, {"limit": True})


def test_sync__a_changed_declaration_does_not_lift_an_operators_suspension(committed_clock):
    declared.sync(declared=[declaration(kind="nightly")])
    suspended = schedules.suspend("tenant-a", "nightly", "provider outage", actor="ops")
    report = declared.sync(declared=[declaration(kind="changed")])
    assert report.held == [("tenant-a", "nightly", ["target"])] and not report.updated
    assert "held tenant-a/nightly (target changed)" in report.lines()[0]
    assert report.summary().endswith("conflicts=0 held=1")
    info = schedules.get("tenant-a", "nightly")
    assert (info.state, info.suspension_reason, info.generation, info.revision) == (
        "suspended", "operator", 1, suspended.revision)
    # The operator repairs it (the admin's re-issue); the next deploy applies the declaration.
    schedules.update("tenant-a", "nightly", expected_revision=info.revision, actor="ops")
    applied = declared.sync(declared=[declaration(kind="changed")])
    assert applied.updated == [("tenant-a", "nightly", ["target"])]
    after = schedules.get("tenant-a", "nightly")
    assert (after.state, after.generation, after.target_json["payload"]) == (
        "active", 3, {"kind": "changed"})


def test_sync__an_unchanged_declaration_of_an_operator_suspension_is_unchanged(committed_clock):
    declared.sync(declared=[declaration()])
    schedules.suspend("tenant-a", "nightly", "provider outage", actor="ops")
    report = declared.sync(declared=[declaration()])
    assert report.unchanged == [("tenant-a", "nightly")] and report.held == []
