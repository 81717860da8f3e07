"""``DURABLE_SCHEDULE_STALL_AT=<name>=<seconds>`` (durable_schedule/barriers.py) refuses at import
a stall that is negative or not finite, as it refuses an unknown barrier name or a value that is
no number. ``float()`` accepted ``-1``, ``nan`` and ``inf``: the process started, and the first
pass to reach the barrier failed inside its transaction (``time.sleep`` refuses a negative or
NaN length) or slept for ever, far from the setting that caused it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from durable_schedule.barriers import SCHEDULE_DECISION_BEFORE_COMMIT


def _import_with(stall: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DURABLE_SCHEDULE_STALL_AT=stall)
    return subprocess.run([sys.executable, "-c", "import durable_schedule.barriers"],
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("seconds", ["-1", "nan", "inf", "-inf"])
def test_a_negative_or_non_finite_stall__refused_at_import(seconds):
    done = _import_with(f"{SCHEDULE_DECISION_BEFORE_COMMIT}={seconds}")
    assert done.returncode != 0
    assert "DURABLE_SCHEDULE_STALL_AT" in done.stderr and seconds in done.stderr


def test_a_finite_stall__accepted():
    done = _import_with(f"{SCHEDULE_DECISION_BEFORE_COMMIT}=0.5")
    assert done.returncode == 0, done.stderr
