"""Issue 12 item 3 with real processes: a `--loop` runner registers its heartbeat, keeps beating
from its background thread, records a clean stop on SIGTERM, and a killed one is reported dead
once the (controlled) clock passes RUNNER_DEAD_SECONDS. The stop summary is printed once."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest

from durable_schedule.operations.status import collect
from tests.runner.loophelpers import sql, start_loop, stop, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def beats():
    return sql("select lease_owner, kind, passes, stopped_at is not null, beat_at"
               " from durable_runner_heartbeat order by started_at")


def test_loop__heartbeat_from_start_to_a_clean_stop(committed_clock):
    proc = start_loop("process_work", "--lease-owner", "proc-a",
                      env={"DURABLE_HEARTBEAT_SECONDS": "0.2"})
    try:
        wait_until(lambda: beats(), what="the first heartbeat")
        first = beats()[0][4]
        # The background thread writes again: the controlled clock moves, the beat follows.
        committed_clock.set(committed_clock.now + timedelta(seconds=5))
        wait_until(lambda: beats()[0][4] > first, what="a later heartbeat")
        assert [r.state for r in collect().runners] == ["live"]
    finally:
        code, out = stop(proc)
    assert code == 0, out
    [(owner, kind, passes, stopped, _)] = beats()
    assert (owner, kind, stopped) == ("proc-a", "work", True) and passes >= 1
    assert [r.state for r in collect().runners] == ["stopped"]
    assert out.count("work runner stopped after") == 1, out


def test_loop__a_killed_runner_is_reported_dead_after_the_threshold(committed_clock):
    proc = start_loop("process_schedules", "--lease-owner", "proc-b")
    try:
        wait_until(lambda: beats(), what="the first heartbeat")
    finally:
        code, _ = stop(proc, sig=signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert [r.state for r in collect().runners] == ["live"]  # no time has passed
    committed_clock.set(committed_clock.now + timedelta(seconds=61))
    report = collect()
    assert [(r.lease_owner, r.state) for r in report.runners] == [("proc-b", "dead")]
    assert any("proc-b" in w and "is dead" in w for w in report.warnings)


def test_loop__sighup_stops_like_sigterm_and_records_the_stop(committed_clock):
    # The runner keeps a SIGHUP it inherited as ignored (nohup): start it with the default
    # disposition, whatever the test run's own is.
    inherited = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        proc = start_loop("process_work", "--lease-owner", "proc-hup")
    finally:
        signal.signal(signal.SIGHUP, inherited)
    try:
        wait_until(lambda: beats(), what="the first heartbeat")
    finally:
        code, out = stop(proc, sig=signal.SIGHUP)
    assert code == 0, out  # the default action would end it with -SIGHUP and no stop recorded
    [(owner, _, _, stopped, _)] = beats()
    assert (owner, stopped) == ("proc-hup", True)
    assert [r.state for r in collect().runners] == ["stopped"]
