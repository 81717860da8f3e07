"""Issue 14 item 10: specs as an operator reads them, one timestamp format."""

from datetime import UTC, datetime, timedelta

from durable_schedule import schedules
from durable_schedule.admin.timeline import describe_spec, stamp

T = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def test_describe_spec__reads_every_kind():
    assert describe_spec(schedules.Every(timedelta(seconds=10))) == "every 10 s"
    assert describe_spec(schedules.Every(timedelta(hours=1), anchor=T)) == (
        "every 1 h from 2030-01-01 12:00:00 UTC")
    assert describe_spec(schedules.At(T)) == "once at 2030-01-01 12:00:00 UTC"
    assert describe_spec(schedules.After(timedelta(minutes=5))) == (
        "once, 5 min after acceptance")
    assert describe_spec(schedules.Cron("30 2 * * *", tz="Europe/Berlin")) == (
        "cron 30 2 * * * in Europe/Berlin")


def test_stamp__one_format_in_utc():
    berlin = T.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin"))
    assert stamp(berlin) == "2030-01-01 12:00:00 UTC" and stamp(None) == "—"
