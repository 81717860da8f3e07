"""Issue 14 item 1: Work autodiscovery happens in AppConfig.ready, so a process that never calls
``work.autodiscover()`` -- a web process serving the admin, ``manage.py shell`` -- resolves the
stored targets its schedules name (docs/work.md "Where definitions live").

Each test starts a fresh ``manage.py`` process of the testproject against the test database:
in-process, the test modules have long imported every definition.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from durable_schedule import schedules, work
from durable_schedule.store.models import ScheduleDefinition
from tests.schedules.conftest import SCOPE, works
from tests.schedules.processes import MANAGE, ROOT, environment

ADMIN_SCRIPT = Path(__file__).with_name("autodiscovery_admin.py")
LOOKUP = ("from durable_schedule import work; "
          "print(work.lookup('demo.touch', 'v1') is not None)")


def shell(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MANAGE), "shell", "--no-imports", "-c", code],
                          env=environment(**env), capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


@pytest.mark.django_db(transaction=True)
def test_a_fresh_shell_resolves_a_target_of_an_installed_apps_work_module(committed_clock):
    on = shell(LOOKUP)
    off = shell(LOOKUP, DURABLE_AUTODISCOVER="0")
    assert (on.returncode, on.stdout) == (0, "True\n"), on.stderr
    # The control: with the setting off nothing else registers the definitions of
    # testproject/demo/work.py.
    assert (off.returncode, off.stdout) == (0, "False\n"), off.stderr


def make_suspended_schedule() -> int:
    touch = work.lookup("demo.touch", "v1")
    schedules.create(SCOPE, "auto", schedules.Every(timedelta(minutes=10)),
                     touch.target(payload={"n": 1}))
    schedules.suspend(SCOPE, "auto", "clock checked by hand", actor="test")
    return ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="auto").pk


@pytest.mark.django_db(transaction=True)
def test_the_admin_reissues_pauses_resumes_and_triggers_in_a_process_that_never_autodiscovers(
        committed_clock):
    pk = make_suspended_schedule()
    done = shell(ADMIN_SCRIPT.read_text())
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["reissue", "pause", "resume", "trigger"]
    assert "re-issued as generation 2, now active" in lines[0]
    assert "paused" in lines[1] and "resumed" in lines[2] and "running now" in lines[3]
    row = ScheduleDefinition.objects.get(pk=pk)
    assert (row.state, row.active_generation) == ("active", 2)
    assert len(works()) == 1  # the run-now Work


@pytest.mark.django_db(transaction=True)
def test_without_autodiscovery_the_reissue_is_refused_with_ds105(committed_clock):
    """The control of the test above: the same admin request fails when nothing registered the
    target, so the test above passes because of autodiscovery, not despite it."""
    pk = make_suspended_schedule()
    done = shell(ADMIN_SCRIPT.read_text(), DURABLE_AUTODISCOVER="0")
    reissue = done.stdout.splitlines()[0]
    assert "DS105" in reissue, done.stdout + done.stderr
    assert ScheduleDefinition.objects.get(pk=pk).active_generation == 1


def test_an_error_in_a_work_py_stops_startup_and_names_the_module(tmp_path):
    app = tmp_path / "brokenapp"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "work.py").write_text("import no_such_module_for_durable_tests\n")
    env = {"DURABLE_EXTRA_APPS": "brokenapp", "PYTHONPATH": f"{ROOT}:{tmp_path}"}
    failed = shell("print('started')", **env)
    assert failed.returncode != 0 and "started" not in failed.stdout
    assert "No module named 'no_such_module_for_durable_tests'" in failed.stderr
    assert "raised while durable_schedule imported brokenapp.work" in failed.stderr
    # The setting turns it off: the broken module is not imported, the process starts.
    ok = shell("print('started')", DURABLE_AUTODISCOVER="0", **env)
    assert (ok.returncode, ok.stdout) == (0, "started\n"), ok.stderr



@pytest.mark.parametrize("value", ["no", 0, None])
def test_the_setting_must_be_a_bool_and_is_checked_by_the_settings_check(value):
    from django.test import override_settings

    from durable_schedule import conf

    with override_settings(DURABLE_SCHEDULE={"AUTODISCOVER": value}), \
            pytest.raises(ValueError, match=r"AUTODISCOVER'\] must be True or False"):
        conf.validate()
    with override_settings(DURABLE_SCHEDULE={"AUTODISCOVER": False}):
        conf.validate()
        assert conf.autodiscover() is False
