"""USE_TZ = False is refused (DS450), at start-up and by every call, before anything is written.

With USE_TZ off, Django's psycopg connection reads every ``timestamptz`` as a naive local time:
``schedules.create`` committed nothing but failed with a DS103 "accepted_at is a naive
datetime" the caller never passed, ``work.enqueue`` accepted Work and returned naive local
times (docs/getting-started.md promises aware UTC), and every Work pass then failed on that
Work, so it stayed pending forever. ``manage.py check`` said nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from demo.work import touch
from django.core import checks as django_checks
from django.test import override_settings

from durable_schedule import checks, schedules, work
from durable_schedule.errors import TimeZoneSupportOff

pytestmark = pytest.mark.django_db


def test_use_tz_off__the_system_check_reports_ds450():
    assert checks.check_time_zone_support() == []
    with override_settings(USE_TZ=False):
        [message] = checks.check_time_zone_support()
        assert message.id == "durable_schedule.E450" and message.level == django_checks.ERROR
        assert "DS450" in message.msg and "USE_TZ = True" in message.hint
        assert message in django_checks.run_checks()


def test_use_tz_off__every_call_is_refused_before_it_writes(clock):
    target = schedule_targets.report.target(payload={"report": "nightly"})
    calls = [
        lambda: schedules.create("tenant-a", "nightly", schedules.Every(timedelta(hours=1)),
                                 target),
        lambda: touch.enqueue(scope="tenant-a", command="c1", idempotency_key="k1", payload={}),
        lambda: work.list("tenant-a"),
        lambda: work.process_work_pass(max_items=10),
    ]
    with override_settings(USE_TZ=False):
        for call in calls:
            with pytest.raises(TimeZoneSupportOff) as err:
                call()
            assert err.value.code == "DS450"
    assert work.list("tenant-a") == []
    assert schedules.list("tenant-a") == []


def test_use_tz_off__check_deploy_reports_instead_of_crashing():
    with override_settings(USE_TZ=False):
        messages = django_checks.run_checks(include_deployment_checks=True)
    assert "durable_schedule.E450" in {m.id for m in messages}


def test_use_tz_off__durable_status_reports_it_and_exits_2():
    """durable_status runs without the system checks (it reports on a broken store), so with
    USE_TZ off it crashed with a DS450 traceback, and --json printed no document."""
    import json
    from io import StringIO

    from django.core.management import call_command

    from durable_schedule.operations.gauges import read_gauges

    with override_settings(USE_TZ=False):
        for args in ([], ["--json"]):
            out = StringIO()
            with pytest.raises(SystemExit) as exit_:
                call_command("durable_status", *args, stdout=out)
            assert exit_.value.code == 2
            assert "DS450" in out.getvalue()
        json.loads(out.getvalue())  # --json: one document still
        assert read_gauges().up is False
