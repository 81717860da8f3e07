"""A jitter that would put a Work's due time past the supported UTC range.

An ``At`` (or ``After``) has no next instant to bound its jitter, so ``jitter=timedelta.max``
was accepted, and every pass of the schedule then failed (the offset does not fit the
occurrence's ``jitter_us`` bigint; ``nominal + offset`` overflows a datetime) -- a schedule
that never runs and a warning each pass. Now refused at acceptance (DS149, nothing written);
an instant of a repeating spec in the last hours of year 9999 is due at the range's end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidJitter
from durable_schedule.evaluation import jitter as jittering
from durable_schedule.evaluation.policy import MAX_INSTANT
from tests.schedules.conftest import HOUR, SCOPE, T0, create, occurrences, rows, run_pass
from tests.schedules.test_bad_input import snapshot

pytestmark = pytest.mark.django_db
LAST_DAY = datetime(9999, 12, 31, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.mark.parametrize("spec,jitter", [
    (schedules.At(T0 + HOUR), timedelta.max),
    (schedules.After(HOUR), timedelta(days=3_000_000)),
    (schedules.At(LAST_DAY), timedelta(days=2)),
])
def test_create__refuses_a_jitter_past_the_range_and_changes_nothing(clock, target, spec,
                                                                     jitter):
    before = snapshot()
    with pytest.raises(InvalidJitter) as caught:
        create("far", spec, target, jitter=jitter)
    assert caught.value.code == "DS149" and snapshot() == before


def test_update__refuses_it_too(clock, target):
    info = create("one", schedules.At(T0 + HOUR), target)
    before = snapshot()
    with pytest.raises(InvalidJitter):
        schedules.update(SCOPE, "one", expected_revision=info.revision, jitter=timedelta.max)
    assert snapshot() == before


def test_a_jittered_instant_near_the_range_end_runs_due_at_the_end(clock, target):
    clock.set(LAST_DAY - 2 * DAY)
    create("late1", schedules.Every(DAY, anchor=LAST_DAY - 36 * HOUR), target,
           jitter=timedelta(hours=23), overlap="allow_all")
    last = LAST_DAY + 12 * HOUR
    # The precondition: this instant's offset (16.7 h) reaches past the range's end.
    offset = jittering.offset_us(timedelta(hours=23), SCOPE, "late1", 1, "nominal", last)
    assert timedelta(microseconds=offset) > MAX_INSTANT - last
    for instant in (LAST_DAY - 36 * HOUR, LAST_DAY - 12 * HOUR, last):
        counts = run_pass(clock, instant)
        assert counts.materialized == 1, counts
    assert [o[2] for o in occurrences("late1")] == [LAST_DAY - 36 * HOUR,
                                                    LAST_DAY - 12 * HOUR, last]
    assert due_of_work(last) == MAX_INSTANT


def due_of_work(first: datetime) -> datetime:
    return rows("select w.due_at from durable_work w join durable_schedule_occurrence o"
                " on o.work_id = w.work_id where o.schedule_id = 'late1'"
                " and o.first_nominal_utc = %s", (first,))[0][0]
