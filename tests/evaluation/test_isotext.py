"""evaluation/isotext.py: the cached ISO text equals ``isoformat`` for any instant, offset, zone
and fold, including values that compare equal but print differently (equal instants in other
zones, the two wall times of a DST fold in one zone)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.evaluation.isotext import iso_us, utc_iso_us

ZONES = st.sampled_from([UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York"),
                         ZoneInfo("Asia/Kathmandu"), ZoneInfo("Australia/Lord_Howe"),
                         timezone(timedelta(hours=-3, minutes=-30)), None])


def direct(value):
    return value.isoformat(timespec="microseconds")


@settings(max_examples=500, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)), ZONES,
       st.sampled_from([0, 1]), ZONES)
def test_iso_us__equals_isoformat_and_never_mixes_equal_instants(wall, zone, fold, other):
    value = wall.replace(tzinfo=zone, fold=fold)
    assert iso_us(value) == direct(value)
    assert iso_us(value) == direct(value)  # from the cache now
    if zone is not None and other is not None:
        same_instant = value.astimezone(other)  # equal, printed in another zone
        assert iso_us(same_instant) == direct(same_instant)
        assert utc_iso_us(value) == value.astimezone(UTC).isoformat(timespec="microseconds")
    flipped = value.replace(fold=1 - fold)  # equal wall time, maybe another offset
    assert iso_us(flipped) == direct(flipped)


def test_iso_us__both_wall_times_of_a_fold_keep_their_offsets():
    berlin = ZoneInfo("Europe/Berlin")
    early = datetime(2026, 10, 25, 2, 30, tzinfo=berlin)
    late = early.replace(fold=1)
    assert early == late  # same zone: compared by wall time, fold ignored
    assert iso_us(early) == "2026-10-25T02:30:00.000000+02:00"
    assert iso_us(late) == "2026-10-25T02:30:00.000000+01:00"
    assert iso_us(None) is None


def test_iso_us__a_subclass_formats_itself():
    class Shown(datetime):
        def isoformat(self, sep="T", timespec="auto"):
            return "shown"

    assert iso_us(Shown(2026, 1, 1, tzinfo=UTC)) == "shown"
    assert iso_us(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00.000000+00:00"


def test_iso_us__the_utc_texts_stay_bounded_and_stay_right_after_clearing():
    from durable_schedule.evaluation import isotext

    base = datetime(2030, 1, 1, tzinfo=UTC)
    for i in range(isotext._UTC_TEXTS_MAX + 10):
        value = base + timedelta(microseconds=i)
        assert iso_us(value) == direct(value)
        assert len(isotext._UTC_TEXTS) <= isotext._UTC_TEXTS_MAX
    assert iso_us(base) == direct(base)
