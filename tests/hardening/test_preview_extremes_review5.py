"""``schedules.next_instants`` and the cron window at the ends of the datetime range
(docs/api.md): any aware ``after`` a caller can build gives instants or a DS-coded error, never
a bare ``OverflowError``. Near either end a zone's local wall time can leave years 1-9999
(9999-12-31T23:00Z is year 10000 at UTC+14; 0001-01-01T00:00Z is year 0 in Los Angeles), so
the cron search has to start at the nearest representable wall time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidArgument
from durable_schedule.evaluation.timeline import instants_in

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)
ZONES = ["UTC", "Pacific/Kiritimati", "America/Los_Angeles", "Etc/GMT+12", "Europe/Berlin"]
EXPRESSIONS = ["* * * * *", "0 0 * * *", "0 0 1 1 *", "* * * * * *", "0 0 L * *", "0 0 * * 5L"]
AFTERS = [EARLIEST, EARLIEST + timedelta(hours=1), EARLIEST + timedelta(days=2),
          LATEST, LATEST - timedelta(hours=1), LATEST - timedelta(days=2)]


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_cron_preview__near_both_ends_answers_instants_not_overflow(tz, expression):
    spec = schedules.Cron(expression, tz)
    for after in AFTERS:
        found = schedules.next_instants(spec, after, 3)
        assert found == sorted(found) and all(t > after for t in found)
        for t in found:  # each is a real match of the expression in the zone
            wall = t.astimezone(ZoneInfo(tz))
            assert wall.second == 0 or expression.count(" ") == 5
        hi = found[0] if found else LATEST
        assert (instants_in(spec, after, after, hi) is None) == (not found)


def test_cron_preview__the_first_instant_of_year_one_is_its_local_midnight():
    zone = ZoneInfo("America/Los_Angeles")
    found = schedules.next_instants(schedules.Cron("0 * * * *", "America/Los_Angeles"),
                                    EARLIEST, 2)
    assert [t.astimezone(zone).replace(tzinfo=None) for t in found] == [
        datetime(1, 1, 1, 0), datetime(1, 1, 1, 1)]


def test_cron_preview__nothing_after_the_last_wall_time_of_year_9999():
    # 9999-12-31T10:00Z is 23:00 local at UTC+14: one more hourly instant is representable.
    found = schedules.next_instants(schedules.Cron("0 * * * *", "Pacific/Kiritimati"),
                                    datetime(9999, 12, 31, 8, 30, tzinfo=UTC), 5)
    assert found == [datetime(9999, 12, 31, 9, tzinfo=UTC)]


@pytest.mark.parametrize("spec", [
    schedules.Cron("* * * * *", "UTC"), schedules.At(EARLIEST),
    schedules.Every(timedelta(hours=1), anchor=EARLIEST)])
def test_preview__inclusive_at_the_earliest_instant_is_ds406(spec):
    with pytest.raises(InvalidArgument, match="DS406"):
        schedules.next_instants(spec, EARLIEST, 3, inclusive=True)
    later = schedules.next_instants(spec, EARLIEST + timedelta(microseconds=1), 1,
                                    inclusive=True)
    assert later == ([] if isinstance(spec, schedules.At) else
                     schedules.next_instants(spec, EARLIEST, 1))
