"""Adversarial review of Work autodiscovery (issue 14 item 1): AppConfig.ready has imported
every work.py already, so the commands that call autodiscovery again (process_work,
sync_schedules) must find the definitions registered once, not raise "already registered"."""

from __future__ import annotations

import pytest

from durable_schedule import work
from durable_schedule.schedules import declared


def test_autodiscovery_after_ready_registers_nothing_twice():
    before = work.lookup("demo.touch", "v1")
    assert before is not None  # ready() imported testproject/demo/work.py
    work.autodiscover()
    declared.autodiscover()  # sync_schedules: work modules again, then schedules modules
    work.autodiscover()
    assert work.lookup("demo.touch", "v1") is before


@pytest.mark.parametrize("value", ["yes", "false", 1, None])
def test_a_non_bool_setting_stops_startup_instead_of_silently_turning_autodiscovery_off(value):
    """Review: ready() runs in every process (a WSGI worker, a shell) where the settings
    system check may never run; a value such as "false" or 1 must not silently switch the
    import off (the first resume or re-issue would then fail far from the cause, DS105)."""
    from django.core.exceptions import ImproperlyConfigured
    from django.test import override_settings

    from durable_schedule.apps import _autodiscover_work

    with override_settings(DURABLE_SCHEDULE={"AUTODISCOVER": value}), \
            pytest.raises(ImproperlyConfigured, match=r"AUTODISCOVER'\] must be True or False"):
        _autodiscover_work()
    with override_settings(DURABLE_SCHEDULE={"AUTODISCOVER": False}):
        _autodiscover_work()  # off: nothing imported, nothing raised
