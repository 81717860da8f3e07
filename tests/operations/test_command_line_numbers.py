"""A command-line number that is not one, or out of its type's range, is refused by the
commands' argument parser with a diagnostic code (DS406) and a non-zero exit before anything
is read or written (docs/operations.md "Running the runners")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str) -> subprocess.CompletedProcess:
    # an unreachable database: a run that got past its arguments would fail differently
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    return subprocess.run([sys.executable, "testproject/manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [
    ("process_schedules", "--max-schedules", "0"),
    ("process_schedules", "--passes", "-1"),
    ("process_schedules", "--claim-batch", "many"),
    ("process_schedules", "--lease-seconds", "1.5"),
    ("process_work", "--max-items", "0"),
    ("process_work", "--batch", "x"),
    ("process_work", "--concurrency", "four"),
    ("process_work", "--wait-budget", "half"),
    ("durable_prune", "--older-than", "30d", "--batch", "lots"),
    ("durable_status", "--timeout", "soon"),
])
def test_a_bad_number_on_the_command_line_is_refused_with_a_diagnostic_code(args):
    result = manage(*args)
    assert result.returncode != 0, result.stdout
    assert f"argument {args[-2]}: DS406: " in result.stderr, result.stderr
    assert repr(args[-1]) in result.stderr, result.stderr
