"""Adversarial review of Work autodiscovery (issue 14 item 1): AppConfig.ready has imported
every work.py already, so the commands that call autodiscovery again (process_work,
sync_schedules) must find the definitions registered once, not raise "already registered"."""

from __future__ import annotations

from durable_schedule import work
from durable_schedule.schedules import declared


def test_autodiscovery_after_ready_registers_nothing_twice():
    before = work.lookup("demo.touch", "v1")
    assert before is not None  # ready() imported testproject/demo/work.py
    work.autodiscover()
    declared.autodiscover()  # sync_schedules: work modules again, then schedules modules
    work.autodiscover()
    assert work.lookup("demo.touch", "v1") is before
