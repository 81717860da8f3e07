"""The concurrency and crash guarantees with cron schedules (tests/schedules/test_concurrency.py
and test_crash_barriers.py run the same protocol with Every): four racing processes produce
exactly one occurrence and one Work per cron instant; a real crash at a barrier, then recovery,
leaves exactly one occurrence and the one Work with the derived identity."""

from __future__ import annotations

import re

import pytest
from django.db import transaction

from durable_schedule import barriers, schedules
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.schedules import processes
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    SECOND,
    T0,
    create,
    definition,
    occurrences,
    rows,
    works,
)
from tests.schedules.test_crash_barriers import crash_then_recover

SCHEDULES = 400
SCOPES = 8
# T0 is 12:00Z = 13:00 CET: the next hour in Berlin starts at 13:00Z = T0 + 1 hour.
HOURLY_BERLIN = schedules.Cron("0 * * * *", "Europe/Berlin")


@pytest.mark.django_db(transaction=True)
def test_four_processes__race_over_due_cron_schedules_without_duplicates(
        committed_clock, target):
    with transaction.atomic():
        for i in range(SCHEDULES):
            schedules.create(f"tenant-{i % SCOPES}", f"cron-{i:04d}", HOURLY_BERLIN, target)
    committed_clock.set(T0 + HOUR + SECOND)
    running = [processes.start("--max-schedules", str(SCHEDULES), "--claim-batch", "10",
                               "--passes", "20", "--lease-owner", f"racer-{n}")
               for n in range(4)]
    outputs = [p.communicate(timeout=300) for p in running]
    for proc, (_, err) in zip(running, outputs, strict=True):
        assert proc.returncode == 0, err
    materialized = sum(int(re.search(r"materialized=(\d+)", line).group(1))
                       for out, _ in outputs for line in out.splitlines()
                       if line.startswith("pass "))
    assert materialized == SCHEDULES
    assert rows("select count(*), count(distinct (scope_id, schedule_id)),"
                " count(*) filter (where state = 'materialized' and kind = 'nominal'"
                " and first_nominal_utc = %s) from durable_schedule_occurrence",
                (T0 + HOUR,)) == [(SCHEDULES, SCHEDULES, SCHEDULES)]
    assert rows("select count(*), count(distinct work_id), count(distinct source_occurrence_id)"
                " from durable_work") == [(SCHEDULES, SCHEDULES, SCHEDULES)]
    assert rows("select count(*) from durable_schedule_dispatch"
                " where lease_owner is null and due_at = %s", (T0 + 2 * HOUR,)) == [(SCHEDULES,)]


@pytest.mark.crash
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("barrier", [
    barriers.SCHEDULE_BRIDGE_BEFORE_COMMIT,
    barriers.SCHEDULE_LINK_AFTER_COMMIT,
])
def test_crash__cron_at_a_work_barrier_recovers_to_one_occurrence_and_one_work(
        committed_clock, target, barrier):
    create("s", HOURLY_BERLIN, target)
    committed_clock.set(T0 + HOUR)
    crash_then_recover(committed_clock, barrier)
    expected = derive_link(OccurrenceIdentity(SCOPE, "s", 1, "nominal", T0 + HOUR))
    assert [(o[1], o[2], o[4], o[5]) for o in occurrences("s")] == [
        ("nominal", T0 + HOUR, "materialized", expected.work_id)]
    assert [w[0] for w in works()] == [expected.work_id]
    assert definition("s")["cursor_utc"] == T0 + HOUR


@pytest.mark.crash
@pytest.mark.django_db(transaction=True)
def test_crash__cron_at_the_decision_barrier_recovers_to_one_skipped_range(
        committed_clock, target):
    create("s", schedules.Cron("*/10 * * * *", "Asia/Kolkata"), target, misfire="skip")
    committed_clock.set(T0 + 45 * MINUTE)
    crash_then_recover(committed_clock, barriers.SCHEDULE_DECISION_BEFORE_COMMIT)
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")] == [
        ("recovery", T0 + 10 * MINUTE, T0 + 40 * MINUTE, "skipped")]
    assert works() == []
