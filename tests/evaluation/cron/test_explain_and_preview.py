"""explain() sentences and the pure schedules.next_instants preview."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import CronIdentityRequired, InvalidArgument
from durable_schedule.evaluation.cron import explain, parse

T = datetime(2026, 3, 28, tzinfo=UTC)


@pytest.mark.parametrize(("expression", "tz", "sentence"), [
    ("30 2 * * *", "Europe/Berlin", "At 02:30 (Europe/Berlin time)."),
    ("0 0 13 * FRI", "UTC", "At 00:00, on day 13 of the month, if it is a Friday (UTC time)."),
    ("*/15 9-17 * * MON-FRI", "UTC",
     "Every 15 minutes, past hours 9 to 17, on Monday to Friday (UTC time)."),
    ("5/20 * * * *", "UTC", "Every 20 minutes from minute 5 (UTC time)."),
    ("10-50/10 8 * * *", "UTC", "Every 10 minutes from minute 10 to 50, past hour 8 (UTC "
     "time)."),
    ("10-40/10 8 * * *", "UTC", "At 08:10, 08:20, 08:30 and 08:40 (UTC time)."),
    ("0 0 13 * MON-FRI", "UTC",
     "At 00:00, on day 13 of the month, if it falls on Monday to Friday (UTC time)."),
    ("0 0 1-7 * 6#1", "UTC",
     "At 00:00, on days 1 to 7 of the month, if it is the 1st Saturday of the month (UTC "
     "time)."),
    ("0 0 L * *", "UTC", "At 00:00, on the last day of the month (UTC time)."),
    ("0 0 LW * *", "UTC", "At 00:00, on the weekday nearest the last day of the month (UTC "
     "time)."),
    ("0 0 * * 6#3", "UTC", "At 00:00, on the 3rd Saturday of the month (UTC time)."),
    ("0 0 * * 5L", "UTC", "At 00:00, on the last Friday of the month (UTC time)."),
    ("0 6,18 1 JAN,JUL *", "UTC", "At 06:00 and 18:00, on day 1 of the month, in January and "
     "July (UTC time)."),
    ("@hourly", "UTC", "Every hour, at minute 0 (UTC time)."),
    ("* * * * * *", "UTC", "Every second (UTC time)."),
])
def test_explain_says_what_the_sets_mean(expression, tz, sentence):
    assert explain(parse(expression), tz) == sentence


def test_preview_lists_cron_instants_in_utc():
    got = schedules.next_instants(schedules.Cron("30 2 * * *", "Europe/Berlin"), T, 3)
    assert got == [datetime(2026, 3, 28, 1, 30, tzinfo=UTC),
                   datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
                   datetime(2026, 3, 30, 0, 30, tzinfo=UTC)]


def test_preview_inclusive_includes_an_instant_at_after():
    spec = schedules.Cron("0 0 * * *")
    assert schedules.next_instants(spec, T, 1) == [T + timedelta(days=1)]
    assert schedules.next_instants(spec, T, 1, inclusive=True) == [T]


def test_preview_of_h_needs_the_identity_and_matches_the_identity_seed():
    spec = schedules.Cron("H H * * *")
    with pytest.raises(CronIdentityRequired):
        schedules.next_instants(spec, T)
    a = schedules.next_instants(spec, T, 2, identity=("acme", "nightly"))
    assert a == schedules.next_instants(spec, T, 2, identity=("acme", "nightly"))
    assert a[1] - a[0] == timedelta(days=1)


def test_preview_of_every_at_and_after():
    every = schedules.Every(timedelta(hours=1), anchor=T)
    assert schedules.next_instants(every, T, 2) == [T + timedelta(hours=1),
                                                   T + timedelta(hours=2)]
    assert schedules.next_instants(every, T, 1, inclusive=True) == [T]
    with pytest.raises(CronIdentityRequired):
        schedules.next_instants(schedules.Every(timedelta(hours=1)), T)
    assert schedules.next_instants(schedules.Every(timedelta(hours=1)), T, 1,
                                   identity=("s", "id")) == [T + timedelta(hours=1)]
    assert schedules.next_instants(schedules.At(T + timedelta(days=1)), T, 5) == \
        [T + timedelta(days=1)]
    assert schedules.next_instants(schedules.At(T), T) == []
    assert schedules.next_instants(schedules.After(timedelta(minutes=5)), T) == \
        [T + timedelta(minutes=5)]


def test_preview_inclusive_never_lists_the_acceptance_instant_of_an_unanchored_every():
    """An Every without an anchor is previewed as a create at ``after`` would schedule it: its
    k = 0 instant is the acceptance instant itself, which equals the starting cursor and never
    runs, so ``inclusive`` does not list it (docs/schedules.md "Time rules")."""
    every = schedules.Every(timedelta(hours=1))
    expected = [T + timedelta(hours=1), T + timedelta(hours=2)]
    assert schedules.next_instants(every, T, 2, identity=("s", "id")) == expected
    assert schedules.next_instants(every, T, 2, inclusive=True, identity=("s", "id")) == expected


def test_preview_refuses_bad_arguments():
    spec = schedules.Cron("* * * * *")
    for kwargs in ({"count": 0}, {"count": 1001}, {"count": True}, {"inclusive": 1},
                   {"identity": ("only-scope",)}):
        with pytest.raises(InvalidArgument):
            schedules.next_instants(spec, T, **kwargs)
    with pytest.raises(InvalidArgument):
        schedules.next_instants(spec, "2026-01-01")
    assert schedules.next_instants(schedules.Cron("0 0 30 2 *"), T) == []
