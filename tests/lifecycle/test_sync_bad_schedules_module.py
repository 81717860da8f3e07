"""A declaration that ``declare()`` refuses fails its ``schedules.py`` at import; under
``sync_schedules`` that is one ``CommandError`` line with the code and the module to fix, exit
status 1, nothing changed -- not a traceback (docs/schedules.md "Schedules declared in code").
Any import error names the module in a note, as Work autodiscovery does."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule.errors import DeclarationConflict
from durable_schedule.management.commands import sync_schedules
from durable_schedule.schedules import declared

pytestmark = pytest.mark.django_db(transaction=True)


def _refusing(name: str, error: Exception):
    real = declared.import_module

    def import_module(module: str):
        if module == name:
            raise error
        return real(module)

    return import_module


def test_sync_schedules__a_refused_declaration_is_one_line_naming_the_module(
        committed_clock, monkeypatch, capsys):
    monkeypatch.setattr(declared, "import_module", _refusing("demo.schedules", DeclarationConflict(
        "this schedule is declared twice with different values", scope="demo",
        schedule_id="x")))
    with pytest.raises(CommandError) as caught:
        call_command("sync_schedules", stdout=StringIO())
    assert str(caught.value).startswith("DS145: ")
    assert "module='demo.schedules'" in str(caught.value)
    monkeypatch.setattr(sync_schedules.Command, "check", lambda *a, **k: [])
    with pytest.raises(SystemExit) as ended:
        sync_schedules.Command().run_from_argv(["manage.py", "sync_schedules"])
    err = capsys.readouterr().err
    assert ended.value.code == 1 and "Traceback" not in err
    assert err.startswith("CommandError: DS145: ") and "demo.schedules" in err


def test_autodiscover__any_import_error_names_the_module(monkeypatch):
    monkeypatch.setattr(declared, "import_module",
                        _refusing("demo.schedules", ZeroDivisionError("boom")))
    with pytest.raises(ZeroDivisionError) as caught:
        declared.autodiscover()
    assert any("demo.schedules" in note for note in caught.value.__notes__)
