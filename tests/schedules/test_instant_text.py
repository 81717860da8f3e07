"""The batch's timestamptz texts (processor/batch_work.py ``InstantText``): each text reads back
as the instant it was made for. Two aware datetimes of one zone that differ only in ``fold``
(the repeated hour when DST ends) compare and hash equal but are an hour apart, so a text made
for one must never be reused for the other (a runtime cursor loads timestamptz in the
connection's zone: DATABASES TIME_ZONE may be such a zone)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from durable_schedule.processor.batch_work import InstantText

NEW_YORK = ZoneInfo("America/New_York")
EARLIER = datetime(2030, 11, 3, 1, 30, tzinfo=NEW_YORK)  # 05:30Z, EDT
LATER = EARLIER.replace(fold=1)  # 06:30Z, EST: the same wall time an hour later


@pytest.mark.parametrize("order", [(EARLIER, LATER), (LATER, EARLIER)])
def test_instant_text__the_repeated_hour_keeps_each_instant(order):
    assert order[0] == order[1] and hash(order[0]) == hash(order[1])  # the trap
    text = InstantText()
    for value in (*order, *order):
        assert datetime.fromisoformat(text(value)).astimezone(UTC) == value.astimezone(UTC)
    assert (datetime.fromisoformat(text(LATER)) - datetime.fromisoformat(text(EARLIER))
            == timedelta(hours=1))


def test_instant_text__equal_utc_instants_share_one_text():
    text = InstantText()
    instant = datetime(2030, 1, 1, 12, tzinfo=UTC)
    assert text(instant) == "2030-01-01T12:00:00+00:00"
    assert text(instant + timedelta(0)) is text(instant)
    assert text(None) is None
