"""Bad inputs to the schedule commands and reads are DS-coded errors that change nothing
(docs/api.md: "Every error is a DurableError with a stable code"), at the edges the earlier
hardening did not reach: a paging cursor PostgreSQL text cannot hold, a backfill starting at
``datetime.min``, and a target whose relative deadline no instant can carry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from durable_schedule.errors import DurableError, InvalidArgument, WorkArithmeticOutOfRange
from tests.conftest import T0
from tests.schedules.conftest import HOUR, SECOND, run_pass, works

pytestmark = pytest.mark.django_db
A = "acme"
EARLIEST = datetime.min.replace(tzinfo=UTC)


@pytest.fixture
def target():
    return schedule_targets.report.target(payload={"report": "nightly"})


@pytest.mark.parametrize("cursor", ["a\x00b", "\ud800"])
def test_list__a_cursor_text_cannot_hold_is_ds406(clock, target, cursor):
    schedules.create(A, "s", schedules.Every(HOUR), target)
    with pytest.raises(InvalidArgument, match="DS406"):
        schedules.list(A, after=cursor)
    assert [i.schedule_id for i in schedules.list(A, after="r")] == ["s"]


def test_backfill__from_datetime_min_is_ds406_not_overflow(clock, target):
    schedules.create(A, "s", schedules.Every(HOUR, anchor=T0 - timedelta(days=3)), target)
    with pytest.raises(DurableError) as caught:
        schedules.backfill(A, "s", EARLIEST, T0, "r1")
    assert caught.value.code == "DS406"
    assert schedules.occurrences(A, "s") == []


@pytest.mark.parametrize("deadline_after", [timedelta.max, timedelta(days=3_000_000)])
def test_create_and_update__a_deadline_no_instant_can_carry_is_refused(clock, target,
                                                                      deadline_after):
    huge = schedule_targets.report.target(payload={"r": 1}, deadline_after=deadline_after)
    with pytest.raises(WorkArithmeticOutOfRange, match="DS215"):
        schedules.create(A, "huge", schedules.Every(HOUR), huge)
    assert schedules.list(A) == []
    info = schedules.create(A, "s", schedules.Every(HOUR), target)
    with pytest.raises(WorkArithmeticOutOfRange, match="DS215"):
        schedules.update(A, "s", expected_revision=info.revision, target=huge)
    assert schedules.get(A, "s").generation == 1
    # The refused update left generation 1 running (accepted, its every pass failed DS215).
    assert run_pass(clock, T0 + HOUR + SECOND).materialized == 1
    assert len(works(A)) == 1


def test_resume__the_refusal_of_an_active_schedule_reads_as_english(clock, target):
    schedules.create(A, "s", schedules.Every(HOUR), target)
    with pytest.raises(DurableError, match="DS147: an active schedule is not paused"):
        schedules.resume(A, "s")


@pytest.mark.parametrize("spec", [schedules.Every(HOUR),
                                  schedules.Cron("0 * * * *", "America/Los_Angeles")])
def test_create__start_at_datetime_min_is_no_bound_not_an_overflow(clock, target, spec):
    info = schedules.create(A, "s", spec, target, start_at=EARLIEST)
    plain = schedules.create(A, "t", spec, target)
    assert (info.state, info.start_at) == ("active", EARLIEST)
    assert (info.cursor_utc, info.next_nominal_utc) == (plain.cursor_utc, plain.next_nominal_utc)
