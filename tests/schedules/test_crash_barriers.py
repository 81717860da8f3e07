"""docs/protocol/schedules.md rule S9, docs/protocol/schedules.md "Deferred crash-proof criteria": a
process killed for real (os._exit) at each schedule barrier, then a recovery pass, leaves exactly
one occurrence and at most the one accepted Work its decision calls for, with the derived Work
identity."""

from __future__ import annotations

import pytest

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
    works,
)

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]

LEASE = ("--lease-seconds", "5")


def crash_then_recover(clock, barrier: str) -> None:
    killed = processes.run(*LEASE, DURABLE_SCHEDULE_CRASH_AT=barrier)
    assert killed.returncode == barriers.CRASH_EXIT_CODE, killed.stderr
    assert f"crash barrier {barrier} reached" in killed.stderr
    clock.advance(6 * SECOND)  # the dead process's lease expires
    recovered = processes.run(*LEASE, "--passes", "3")
    assert recovered.returncode == 0, recovered.stderr


@pytest.mark.parametrize("barrier", [
    barriers.SCHEDULE_WORK_AFTER_ACCEPTANCE,
    barriers.SCHEDULE_BRIDGE_BEFORE_COMMIT,
    barriers.SCHEDULE_LINK_AFTER_COMMIT,
])
def test_crash__at_a_work_barrier_recovers_to_one_occurrence_and_one_work(
        committed_clock, target, barrier):
    create("s", schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    crash_then_recover(committed_clock, barrier)
    expected = derive_link(OccurrenceIdentity(SCOPE, "s", 1, "nominal", T0 + HOUR))
    assert [(o[1], o[2], o[4], o[5]) for o in occurrences("s")] == [
        ("nominal", T0 + HOUR, "materialized", expected.work_id)]
    assert [w[0] for w in works()] == [expected.work_id]
    assert definition("s")["cursor_utc"] == T0 + HOUR


@pytest.mark.parametrize("barrier", [
    barriers.SCHEDULE_DECISION_BEFORE_COMMIT,
    barriers.SCHEDULE_DECISION_AFTER_COMMIT,
])
def test_crash__at_a_decision_barrier_recovers_to_one_decision_and_no_work(
        committed_clock, target, barrier):
    create("s", schedules.Every(10 * MINUTE), target, misfire="skip")
    committed_clock.set(T0 + 45 * MINUTE)
    crash_then_recover(committed_clock, barrier)
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("s")] == [
        ("recovery", T0 + 10 * MINUTE, T0 + 40 * MINUTE, "skipped")]
    assert works() == []
    assert definition("s")["cursor_utc"] == T0 + 40 * MINUTE
