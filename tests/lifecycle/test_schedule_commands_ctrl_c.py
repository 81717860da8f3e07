"""Ctrl-C (SIGINT) in ``process_schedules`` and ``sync_schedules`` run from the command line
(docs/operations.md "Stopping"): before ``handle()`` began (Django's system checks, which read
the database) and, for ``sync_schedules``, during or after its one transaction, the command ends
with one line on stderr naming what the interrupt left, and exit status 130 -- not a traceback.
``--traceback`` and ``call_command`` still get the ``KeyboardInterrupt``. The interrupt is
raised where a real SIGINT's ``KeyboardInterrupt`` would surface (the checks, the sync), so the
outcome is deterministic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from durable_schedule import schedules
from durable_schedule.errors import ScheduleNotFound
from durable_schedule.management.commands import process_schedules, sync_schedules
from durable_schedule.schedules import declared
from tests.lifecycle.test_declared import touch_target

ANCHOR = datetime(2030, 1, 1, tzinfo=UTC)


def _interrupt(*_args, **_kwargs):
    raise KeyboardInterrupt


def _run(command_class, name: str, *args: str, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ended:
        command_class().run_from_argv(["manage.py", name, *args])
    return ended.value.code, capsys.readouterr().err


def _one_line(err: str, name: str) -> str:
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{name}: interrupted "), err
    return lines[0]


@pytest.mark.parametrize(("command_class", "name"), [
    (process_schedules.Command, "process_schedules"),
    (sync_schedules.Command, "sync_schedules"),
])
def test_ctrl_c_during_the_system_checks_is_one_line_and_exit_130(
        monkeypatch, capsys, command_class, name):
    monkeypatch.setattr(command_class, "check", _interrupt)
    monkeypatch.setattr(command_class, "handle", _must_not_run)
    code, err = _run(command_class, name, capsys=capsys)
    assert code == 130
    assert _one_line(err, name).endswith("before it started: nothing was done")


def _must_not_run(*_args, **_kwargs):
    raise AssertionError("handle() ran after the interrupt")


def test_ctrl_c_before_the_start_keeps_the_traceback_when_asked(monkeypatch):
    monkeypatch.setattr(process_schedules.Command, "check", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        process_schedules.Command().run_from_argv(
            ["manage.py", "process_schedules", "--traceback"])


def _declaration(schedule_id: str) -> declared.Declaration:
    return declared.Declaration(scope="tenant-a", schedule_id=schedule_id,
                                spec=schedules.Every(timedelta(hours=1), anchor=ANCHOR),
                                target=touch_target(kind="k"))


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_during_the_sync_rolls_it_back_and_says_so(committed_clock, monkeypatch, capsys):
    wanted = [_declaration("first"), _declaration("second")]
    monkeypatch.setattr(declared, "declarations", lambda: wanted)
    monkeypatch.setattr(sync_schedules.Command, "check", lambda *a, **k: [])
    applied = declared._apply

    def apply_then_interrupt(decl, *args, **kwargs):
        if decl.schedule_id == "second":  # "first" was created in the same transaction
            raise KeyboardInterrupt
        return applied(decl, *args, **kwargs)

    monkeypatch.setattr(declared, "_apply", apply_then_interrupt)
    code, err = _run(sync_schedules.Command, "sync_schedules", capsys=capsys)
    assert code == 130
    assert "rolled back, nothing was changed" in _one_line(err, "sync_schedules")
    with pytest.raises(ScheduleNotFound):
        schedules.get("tenant-a", "first")


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_after_the_sync_committed_says_it_did(committed_clock, monkeypatch, capsys):
    monkeypatch.setattr(declared, "declarations", lambda: [_declaration("first")])
    monkeypatch.setattr(sync_schedules.Command, "check", lambda *a, **k: [])
    monkeypatch.setattr(declared.SyncReport, "lines", _interrupt)  # while printing the report
    code, err = _run(sync_schedules.Command, "sync_schedules", capsys=capsys)
    assert code == 130
    line = _one_line(err, "sync_schedules")
    assert "after the sync ended (created=1 " in line, line
    assert schedules.get("tenant-a", "first").generation == 1


@pytest.mark.django_db(transaction=True)
def test_call_command_still_gets_the_interrupt(committed_clock, monkeypatch):
    monkeypatch.setattr(declared, "sync", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        call_command("sync_schedules")


def test_ctrl_c_before_a_loop_began_is_one_line_and_exit_130(monkeypatch, capsys):
    monkeypatch.setattr(process_schedules.Command, "check", lambda *a, **k: [])
    monkeypatch.setattr(process_schedules, "check_prepared_statements", _interrupt)
    monkeypatch.setattr(process_schedules.Command, "_loop", _must_not_run)
    code, err = _run(process_schedules.Command, "process_schedules", "--loop", capsys=capsys)
    assert code == 130
    assert _one_line(err, "process_schedules").endswith("before it started: nothing was done")


def test_ctrl_c_while_importing_the_declarations_changed_nothing(monkeypatch, capsys):
    monkeypatch.setattr(sync_schedules.Command, "check", lambda *a, **k: [])
    monkeypatch.setattr(declared, "autodiscover", _interrupt)
    monkeypatch.setattr(declared, "sync", _must_not_run)
    code, err = _run(sync_schedules.Command, "sync_schedules", capsys=capsys)
    assert code == 130
    assert _one_line(err, "sync_schedules").endswith(
        "while importing the declarations: nothing was changed")
