"""A Cron's jitter bound is read in the year after the command's transaction time, the database
clock seam ``durable_schedule_clock`` every instant of the schedule comes from
(docs/schedules.md "Jitter"), not from the process clock.

``45 * * * *`` in Europe/Moscow: the zone has had no DST since 2011, so today its shortest gap
is the hour; in 2010 it still sprang forward (28 March, 02:00 -> 03:00), and under
``dst_gap="shift"`` 01:45 and the missing 02:45 (run at 03:00) are 15 minutes apart. With the
clock seam in 2010 the schedule's instants are 2010's, so a 30-minute jitter would put that
night's 01:45 Work after the 03:00 instant: ``create`` and ``update`` refuse it (DS149, nothing
written), as the database clock implies; on the process clock they accepted it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidJitter
from tests.schedules.conftest import SCOPE, create, definition
from tests.schedules.test_bad_input import snapshot

pytestmark = pytest.mark.django_db
IN_2010 = datetime(2010, 1, 1, tzinfo=UTC)
MOSCOW = schedules.Cron("45 * * * *", tz="Europe/Moscow")
HALF_HOUR = timedelta(minutes=30)


def test_create__a_cron_jitter_is_bounded_by_the_gaps_after_the_database_clock(clock, target):
    clock.set(IN_2010)
    before = snapshot()
    with pytest.raises(InvalidJitter) as refused:
        create("m", MOSCOW, target, jitter=HALF_HOUR)
    assert refused.value.code == "DS149"
    assert refused.value.context["gap"] == str(timedelta(minutes=15))
    assert snapshot() == before
    # Ten minutes is below every gap of 2010: accepted.
    info = create("m", MOSCOW, target, jitter=timedelta(minutes=10))
    assert info.jitter == timedelta(minutes=10)


def test_update__a_cron_jitter_is_bounded_by_the_gaps_after_the_database_clock(clock, target):
    clock.set(IN_2010)
    info = create("m", MOSCOW, target)
    before = snapshot()
    with pytest.raises(InvalidJitter) as refused:
        schedules.update(SCOPE, "m", expected_revision=info.revision, jitter=HALF_HOUR)
    assert refused.value.context["gap"] == str(timedelta(minutes=15))
    assert snapshot() == before
    assert definition("m")["revision"] == info.revision
