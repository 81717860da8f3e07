"""Options that contradict each other, or a pass count given through ``call_command`` that no
parser checked, are refused with DS406 before anything runs (docs/operations.md "Running the
runners", "Archiving history partitions")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def untouched(monkeypatch):
    """Records whether process_schedules reached the database or started its loop."""
    from durable_schedule.management.commands import process_schedules as command
    from durable_schedule.runner import service

    touched: list[str] = []
    monkeypatch.setattr(command, "check_prepared_statements", lambda: touched.append("probe"))
    monkeypatch.setattr(service, "serve", lambda *a, **k: touched.append("loop"))
    monkeypatch.setattr(command, "process_due_once",
                        lambda *a, **k: touched.append("pass"))
    return touched


def test_loop_with_passes_is_refused_not_ignored(clock, untouched):
    # --loop runs passes until SIGTERM; --passes 3 was silently dropped (a loop that the
    # operator meant to stop after three passes ran for ever)
    with pytest.raises(CommandError, match=r"DS406: .*--passes.*--loop"):
        call_command("process_schedules", "--loop", "--passes", "3", stdout=StringIO())
    assert untouched == []


@pytest.mark.parametrize("passes", [0, -2, "3", 2.5, True])
def test_a_pass_count_no_parser_checked_is_refused(clock, untouched, passes):
    # call_command(passes=0) ran no pass at all and exited 0 as if it had
    with pytest.raises(CommandError, match=r"DS406: .*passes"):
        call_command("process_schedules", passes=passes, stdout=StringIO())
    assert untouched == []


@pytest.mark.parametrize("args", [("--drop",), ("--transcript-dir", "/tmp"),
                                  ("--archive-before", "2030-02")])
def test_archive_options_without_their_partner_carry_a_diagnostic_code(clock, args):
    with pytest.raises(CommandError, match=r"^DS406: "):
        call_command("durable_partitions", *args, stdout=StringIO())
