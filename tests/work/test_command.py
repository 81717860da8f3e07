"""Issue 3 item 7: ``manage.py process_work`` is a thin command over ``process_work_pass``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule import work
from tests.work.conftest import work_row

pytestmark = pytest.mark.django_db


def test_process_work__runs_one_bounded_pass_and_prints_its_counts(clock):
    work.autodiscover()
    touch = work.lookup("demo.touch", "v1")
    ids = [touch.enqueue(scope="tenant-a", command="c", idempotency_key=f"k{i}",
                         payload={}).work_id for i in range(3)]
    out = StringIO()
    call_command("process_work", "--max-items", "2", "--batch", "1", "--lease-owner", "cmd",
                 "--no-heartbeat", stdout=out)
    assert out.getvalue().startswith("claimed=2 admitted=2 succeeded=2 ")
    assert [work_row(i, "state")[0] for i in ids] == ["succeeded", "succeeded", "pending"]


def test_process_work__a_bad_lease_fails_with_its_diagnostic_code(clock):
    with pytest.raises(CommandError, match="DS404"):
        call_command("process_work", "--lease-owner", "bad\towner", stdout=StringIO())


@pytest.mark.parametrize("args", [("--batch", "1001"),
                                  ("--lease-seconds", "601"), ("--lease-owner", "bad\towner")])
def test_process_work__a_bad_argument_is_refused_before_the_database_is_touched(
        clock, monkeypatch, args):
    from durable_schedule.management.commands import process_work as command

    touched = []
    monkeypatch.setattr(command, "check_prepared_statements", lambda: touched.append(1))
    with pytest.raises(CommandError, match=r"process_work: DS\d{3}: "):
        call_command("process_work", *args, stdout=StringIO())
    assert touched == []


def test_process_work__call_command_callers_still_get_a_keyboard_interrupt(clock, define):
    """docs/operations.md "Stopping": the one line and exit status 130 of an interrupted run are
    the command line's (tests/runner/test_bounded_pass_ctrl_c.py); a program running the pass
    through ``call_command`` is interrupted itself, never handed an error it might swallow."""
    d = define("t.cmd_interrupt")

    @d.executor
    def interrupt(ctx, payload):
        raise KeyboardInterrupt

    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id
    with pytest.raises(KeyboardInterrupt):
        call_command("process_work", "--no-heartbeat", stdout=StringIO())
    assert work_row(work_id, "state") == ("running",)
