"""Running ``manage.py process_schedules`` in real subprocesses against the test database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import database_url

ROOT = Path(__file__).resolve().parents[2]
MANAGE = ROOT / "testproject" / "manage.py"


def command(*args: str) -> list[str]:
    return [sys.executable, str(MANAGE), "process_schedules", *args]


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ, DATABASE_URL=database_url(), PYTHONPATH=str(ROOT))
    env.pop("DURABLE_SCHEDULE_CRASH_AT", None)
    env.update(extra)
    return env


def run(*args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), env=environment(**extra), capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def start(*args: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen(command(*args), env=environment(**extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
