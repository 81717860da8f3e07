"""Crash-barrier coverage for run now and backfill (issue 14 "Tests"): a real process killed
(os._exit) at each barrier the command passes — the Work accepted, the bridge before commit,
the link after commit — then the same command again: exactly one occurrence per identity and
one Work each, with the derived Work identity."""

from __future__ import annotations

import subprocess
import sys

import pytest

from durable_schedule import barriers, schedules
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.schedules.conftest import HOUR, MINUTE, SCOPE, T0, TEN, create, occurrences, works
from tests.schedules.processes import MANAGE, ROOT, environment

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]

BARRIERS = [barriers.SCHEDULE_WORK_AFTER_ACCEPTANCE, barriers.SCHEDULE_BRIDGE_BEFORE_COMMIT,
            barriers.SCHEDULE_LINK_AFTER_COMMIT]


def shell(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MANAGE), "shell", "-c", code],
                          env=environment(**env), capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def killed_at(barrier: str, code: str) -> None:
    done = shell(code, DURABLE_SCHEDULE_CRASH_AT=barrier)
    assert done.returncode == barriers.CRASH_EXIT_CODE, done.stderr[-2000:]
    assert f"crash barrier {barrier} reached" in done.stderr


@pytest.mark.parametrize("barrier", BARRIERS)
def test_crash__trigger_killed_at_a_barrier_then_retried_is_one_manual_run(committed_clock,
                                                                           target, barrier):
    create("s", schedules.Every(HOUR), target)
    committed_clock.set(T0 + MINUTE)
    code = ("from durable_schedule import schedules; "
            f"schedules.trigger({SCOPE!r}, 's', 'deploy-7', actor='ci')")
    killed_at(barrier, code)
    again = schedules.trigger(SCOPE, "s", "deploy-7", actor="ci")
    committed = barrier == barriers.SCHEDULE_LINK_AFTER_COMMIT
    assert again.created is not committed  # rolled back before the commit: created now
    expected = derive_link(OccurrenceIdentity(SCOPE, "s", 1, "manual", T0 + MINUTE))
    assert [(o[1], o[2], o[4], o[5]) for o in occurrences("s")] == [
        ("manual", T0 + MINUTE, "materialized", expected.work_id)]
    assert [w[0] for w in works()] == [expected.work_id] == [again.work_id]


@pytest.mark.parametrize("barrier", BARRIERS)
def test_crash__backfill_killed_at_a_barrier_then_repeated_makes_no_duplicate(committed_clock,
                                                                             target, barrier):
    create("s", schedules.Every(TEN, anchor=T0 - HOUR), target, overlap="allow_all")
    committed_clock.set(T0 + MINUTE)
    start, end = T0 - 30 * MINUTE, T0 - 10 * MINUTE
    code = ("from datetime import datetime; from durable_schedule import schedules; "
            f"schedules.backfill({SCOPE!r}, 's', datetime.fromisoformat({start.isoformat()!r}),"
            f" datetime.fromisoformat({end.isoformat()!r}), 'bf-1', actor='ci')")
    killed_at(barrier, code)
    schedules.backfill(SCOPE, "s", start, end, "bf-1", actor="ci")
    instants = [start, start + TEN, end]
    expected = [derive_link(OccurrenceIdentity(SCOPE, "s", 1, "recovery", t)).work_id
                for t in instants]
    assert [(o[1], o[2], o[4], o[5]) for o in occurrences("s")] == [
        ("recovery", t, "materialized", w) for t, w in zip(instants, expected, strict=True)]
    assert sorted(w[0] for w in works()) == sorted(expected)
