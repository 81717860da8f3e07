"""Crash-barrier coverage for run now, backfill and buffer_all (issue 14 "Tests"): a real
process killed (os._exit) at each barrier the command or pass reaches — the Work accepted, the
bridge before commit, the link after commit; for a buffering pass the decision before and after
commit — then the same command or pass again: exactly one occurrence per identity and one Work
each, with the derived Work identity."""

from __future__ import annotations

import subprocess
import sys

import pytest

from durable_schedule import barriers, schedules
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.schedules import processes
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    occurrences,
    run_pass,
    set_work_state,
    works,
)
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


# ---------------------------------------------------------------- buffer_all
BUFFER_BARRIERS = [barriers.SCHEDULE_DECISION_BEFORE_COMMIT,
                   barriers.SCHEDULE_DECISION_AFTER_COMMIT]


def _pass_killed_at(barrier: str) -> None:
    done = processes.run("--max-schedules", "5", "--lease-owner", "doomed",
                         DURABLE_SCHEDULE_CRASH_AT=barrier)
    assert done.returncode == barriers.CRASH_EXIT_CODE, done.stderr[-2000:]
    assert f"crash barrier {barrier} reached" in done.stderr


def _finish_running() -> None:
    for work_id, state, *_ in works():
        if state not in ("succeeded", "failed", "expired", "canceled"):
            set_work_state(work_id, "succeeded")


@pytest.mark.parametrize("barrier", BUFFER_BARRIERS)
def test_crash__buffer_all_pass_killed_while_buffering_then_rerun_buffers_once(
        committed_clock, target, barrier):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(committed_clock, T0 + TEN)  # 12:10 runs and keeps running
    committed_clock.set(T0 + 2 * TEN)
    _pass_killed_at(barrier)  # 12:20 is buffered by the killed pass (or rolled back)
    run_pass(committed_clock, T0 + 2 * TEN + 2 * MINUTE)  # past the dead pass's lease
    assert [(o[1], o[2], o[4], o[5] is None) for o in occurrences("s")][1:] == [
        ("nominal", T0 + 2 * TEN, "pending", True)]
    assert len(works()) == 1


@pytest.mark.parametrize("barrier", BARRIERS)
def test_crash__buffer_all_pass_killed_running_a_buffered_instant_then_rerun_runs_it_once(
        committed_clock, target, barrier):
    create("s", schedules.Every(TEN), target, overlap="buffer_all")
    run_pass(committed_clock, T0 + TEN)  # 12:10 runs
    run_pass(committed_clock, T0 + 2 * TEN)  # 12:20 buffered
    run_pass(committed_clock, T0 + 3 * TEN)  # 12:30 buffered
    committed_clock.set(T0 + 3 * TEN + MINUTE)
    _finish_running()  # the slot frees: the next pass runs 12:20
    _pass_killed_at(barrier)
    run_pass(committed_clock, T0 + 3 * TEN + 3 * MINUTE)  # past the dead pass's lease
    expected = [derive_link(OccurrenceIdentity(SCOPE, "s", 1, "nominal", T0 + k * TEN)).work_id
                for k in (1, 2)]
    assert [w[0] for w in works()] == expected  # 12:20 ran exactly once, 12:30 not yet
    assert [(o[2], o[4], o[5]) for o in occurrences("s")] == [
        (T0 + TEN, "materialized", expected[0]), (T0 + 2 * TEN, "materialized", expected[1]),
        (T0 + 3 * TEN, "pending", None)]
