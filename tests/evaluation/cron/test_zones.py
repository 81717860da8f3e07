"""Zone rules: offsets, the transitions list, the fingerprint, the TZif seam and the fence
evidence (the first instant a rules change would move)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.errors import UnknownTimeZone
from durable_schedule.evaluation.cron import Cron, fence, zones
from durable_schedule.evaluation.cron.spec import bind
from durable_schedule.evaluation.cron.zones import load, rules_at
from tests.evaluation.cron.tzif import write_tzif

BERLIN = "CET-1CEST,M3.5.0,M10.5.0/3"
# A "tz database update": summer time from the second Sunday of March.
BERLIN_EARLY = "CET-1CEST,M3.2.0,M10.5.0/3"
JAN_2026 = datetime(2026, 1, 1, tzinfo=UTC)


def sec(value: datetime) -> int:
    return int(value.timestamp())


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["Europe/Berlin", "America/Santiago", "Australia/Lord_Howe",
                        "Antarctica/Troll", "Pacific/Apia", "Asia/Kolkata", "UTC"]),
       st.integers(sec(datetime(1900, 1, 1, tzinfo=UTC)), sec(datetime(2100, 1, 1, tzinfo=UTC))))
def test_offsets_are_zoneinfos(name, u):
    expected = datetime.fromtimestamp(u, UTC).astimezone(ZoneInfo(name)).utcoffset()
    assert load(name).offset_at(u) == expected // timedelta(seconds=1)


@pytest.mark.parametrize("name", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                                  "Antarctica/Troll", "Pacific/Apia"])
def test_changes_are_every_offset_change_to_the_second(name):
    zone = load(name)
    start, end = sec(datetime(2011, 1, 1, tzinfo=UTC)), sec(datetime(2013, 1, 1, tzinfo=UTC))
    changes = zone.changes(start, end)
    assert changes, "every one of these zones changes its offset in 2011-2012"
    for t, after in changes:
        assert zone.offset_at(t) == after != zone.offset_at(t - 1)
    # Between consecutive changes the offset is constant (probed every 15 minutes).
    bounds = [start, *(t for t, _ in changes), end]
    for a, b in zip(bounds, bounds[1:], strict=False):
        offset = zone.offset_at(a)
        assert all(zone.offset_at(u) == offset for u in range(a, b, 900))


def test_fingerprint_is_the_documented_hash_of_the_changes():
    rules = rules_at(load("Europe/Berlin"), sec(JAN_2026))
    assert rules.end - rules.start == int(zones.FINGERPRINT_HORIZON.total_seconds())
    assert rules.offset == 3600 and len(rules.changes) == 20  # two a year for ten years
    assert rules.changes[0] == (sec(datetime(2026, 3, 29, 1, tzinfo=UTC)), 7200)
    text = "\n".join(["ds-tz-fp-v1", f"from {rules.start}", f"to {rules.end}", "offset 3600",
                      *(f"{t} {o}" for t, o in rules.changes)]) + "\n"
    assert rules.fingerprint == hashlib.sha256(text.encode()).hexdigest()


def test_the_seam_reads_a_tzif_file_and_a_changed_file_changes_the_fingerprint(tmp_path):
    start = sec(JAN_2026)
    system = rules_at(load("Europe/Berlin"), start)
    same = write_tzif(tmp_path / "same", BERLIN, 3600, "CET")
    early = write_tzif(tmp_path / "early", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", same):
        assert rules_at(load("Europe/Berlin"), start).fingerprint == system.fingerprint
    with zones.override("Europe/Berlin", early):
        changed = rules_at(load("Europe/Berlin"), start)
    assert changed.fingerprint != system.fingerprint
    assert changed.changes[0] == (sec(datetime(2026, 3, 8, 1, tzinfo=UTC)), 7200)
    # The seam is gone after the block.
    assert rules_at(load("Europe/Berlin"), start).fingerprint == system.fingerprint


def test_fence_evidence_names_both_fingerprints_and_the_first_moved_instant(tmp_path):
    spec = bind(Cron("0 12 * * *", "Europe/Berlin"), "acme", "noon", JAN_2026)
    assert fence.drift(spec, JAN_2026) is None
    early = write_tzif(tmp_path / "early", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        evidence = fence.drift(spec, JAN_2026)
    assert evidence["persisted_fingerprint"] == spec.tz_rules.fingerprint
    assert evidence["current_fingerprint"] != spec.tz_rules.fingerprint
    # 8 March 12:00 is CEST under the new rules (10:00Z), CET under the persisted ones (11:00Z).
    assert evidence["first_moved_instant"] == {
        "wall": "2026-03-08T12:00:00", "utc_new_rules": "2026-03-08T10:00:00.000000+00:00",
        "utc_old_rules": "2026-03-08T11:00:00.000000+00:00"}
    # After the differing weeks nothing moves any more for this window's first change.
    with zones.override("Europe/Berlin", early):
        later = fence.drift(spec, datetime(2026, 3, 30, tzinfo=UTC))
    assert later["first_moved_instant"]["wall"] == "2027-03-14T12:00:00"


def test_unknown_zones_are_refused():
    for name in ("Mars/Base", "", "../etc/passwd", None, 7, "x" * 101):
        with pytest.raises(UnknownTimeZone):
            load(name)


def test_a_bound_spec_round_trips_through_its_stored_json():
    from durable_schedule.evaluation.timeline import spec_from_json, spec_to_json

    spec = bind(Cron("H 2 * * 1-5", "America/Santiago", dst_gap="skip", dst_fold="second"),
                "acme", "job", JAN_2026)
    data = json.loads(json.dumps(spec_to_json(spec)))
    back = spec_from_json("cron", data, "ds-cron-v1")
    assert back == spec and back.tz_rules == spec.tz_rules
    assert back.pattern.minutes == spec.pattern.minutes
