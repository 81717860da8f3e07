"""A cron schedule whose zone disappears from the installed tz database (a tzdata or OS upgrade
renamed or removed it) is quarantined with its own diagnostic, DS160 ``tz_unavailable``, not
the generic DS114 ``invalid_spec``: the spec was valid, the zone vanished. durable_status and
the status report say so; the other schedules of the pass are untouched; putting the zone back
and re-issuing repairs it (docs/schedules.md "Time zones")."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from durable_schedule import schedules
from durable_schedule.errors import TimeZoneUnavailable, UnevaluableGeneration, UnknownTimeZone
from durable_schedule.evaluation.cron import zones
from durable_schedule.evaluation.cron.spec import from_json, to_json
from durable_schedule.operations.status import collect
from tests.schedules.conftest import SCOPE, create, definition, one, rows, run_pass, works

pytestmark = pytest.mark.django_db

START = datetime(2030, 1, 1, tzinfo=UTC)


def test_vanished_zone__quarantined_as_ds160_tz_unavailable_and_status_says_so(
    clock, target, tmp_path
):
    clock.set(START)
    create("berlin", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    create("utc", schedules.Cron("0 12 * * *", "UTC"), target)
    missing = str(tmp_path / "no-such-tzif")  # the zone's file is gone from the tz database
    with zones.override("Europe/Berlin", missing):
        with pytest.raises(UnknownTimeZone):
            zones.load("Europe/Berlin")
        counts = run_pass(clock, datetime(2030, 1, 1, 12, 0, 1, tzinfo=UTC))
        assert (counts.suspended, counts.materialized) == (1, 1)
        d = definition("berlin")
        assert (d["state"], d["suspension_reason"]) == ("suspended", "unevaluable")
        ev = d["suspension_evidence"]
        assert ev["code"] == TimeZoneUnavailable.code == "DS160"
        assert ev["context"]["reason"] == "tz_unavailable"
        assert ev["context"]["tz"] == "Europe/Berlin"
        assert "no longer has" in ev["message"]
        assert definition("utc")["state"] == "active"
        assert len(works()) == 1  # the UTC schedule's Work only

        status = collect()
        [s] = status.suspended_schedules
        assert (s.schedule_id, s.code, s.cause) == ("berlin", "DS160", "tz_unavailable")
        assert any(
            f"{SCOPE}/berlin suspended: unevaluable (DS160 tz_unavailable)" in p
            for p in status.problems
        )
        out = io.StringIO()
        with pytest.raises(SystemExit):
            call_command("durable_status", stdout=out)
        assert f"{SCOPE}/berlin: unevaluable (DS160 tz_unavailable)" in out.getvalue()

    # The zone is back (tz database reinstalled): re-issuing the stored spec repairs it.
    schedules.update(SCOPE, "berlin", expected_revision=d["revision"])
    assert definition("berlin")["state"] == "active"


def _bad(reason, detail):
    return UnevaluableGeneration(detail, reason=reason)


def _stored_utc_spec() -> dict:
    rules = zones.rules_at(zones.load("UTC"), 0, 10)
    return to_json(schedules.Cron("0 12 * * *", "UTC", h_seed=1, tz_rules=rules))


def test_malformed_stored_zone_name_stays_ds114_invalid_spec():
    """Only a well-formed name that fails to load is DS160; a stored name that could never
    have been accepted (empty, too long) is tampering, DS114 invalid_spec as before."""
    for tz in ("", "x" * 101):
        with pytest.raises(UnevaluableGeneration) as info:
            from_json(dict(_stored_utc_spec(), tz=tz), _bad)
        assert not isinstance(info.value, TimeZoneUnavailable)
        assert info.value.context["reason"] == "invalid_spec"


def test_factory_placeholder_zone_is_refused_for_a_new_schedule_and_nothing_is_written(
    clock, target
):
    clock.set(START)
    with pytest.raises(UnknownTimeZone) as info:
        create("factory", schedules.Cron("0 12 * * *", "Factory"), target)
    assert info.value.code == "DS126"
    assert info.value.context["reason"] == "placeholder_zone"
    assert rows("select 1 from durable_schedule_definition where schedule_id = 'factory'") == []


@pytest.mark.parametrize("tz", ["US/Pacific", "EST5EDT", "Etc/GMT+5", "UCT"])
def test_legacy_iana_names_and_links_are_accepted_by_the_name_given(clock, target, tz):
    """Backward-compatibility links and the legacy POSIX-style zones are IANA names every host
    with a full tz database reads alike: accepted, stored under the name the caller gave
    (docs/schedules.md "Time zones" says why a canonical name is the safer choice)."""
    clock.set(START)
    create("legacy", schedules.Cron("0 12 * * *", tz), target)
    d = definition("legacy")
    assert d["state"] == "active"
    (stored,) = one(
        "select spec->>'tz' from durable_schedule_generation where schedule_id = 'legacy'"
    )
    assert stored == tz


def test_zone_name_disagreeing_with_its_rules_snapshot_stays_ds114_invalid_spec():
    """A stored zone name that is not the zone its (verified) rules snapshot was taken of was
    written by hand, not dropped by a tz database upgrade: DS114 invalid_spec."""
    with pytest.raises(UnevaluableGeneration) as info:
        from_json(dict(_stored_utc_spec(), tz="Mars/Base"), _bad)
    assert not isinstance(info.value, TimeZoneUnavailable)
    assert info.value.context["reason"] == "invalid_spec"
