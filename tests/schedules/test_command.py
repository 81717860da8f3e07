"""Issue 4 item 5: ``manage.py process_schedules`` runs bounded passes, prints the counts (each
schedule's decision at -v 2) and exits non-zero with the diagnostic code on error."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule import schedules
from tests.schedules import processes
from tests.schedules.conftest import (
    HOUR,
    T0,
    create,
    leave_transaction_forms,
    works,
)


def call(*args: str) -> str:
    out = StringIO()
    try:
        call_command("process_schedules", *args, stdout=out)
    finally:
        leave_transaction_forms()
    return out.getvalue()


@pytest.mark.django_db
def test_command__an_empty_pass_prints_zero_counts(clock):
    assert call() == ("pass 1: claimed=0 materialized=0 coalesced=0 recovered=0 skipped=0"
                      " superseded=0 suspended=0 noop=0 held=0\n")


@pytest.mark.django_db
def test_command__max_schedules_bounds_the_pass_and_passes_repeat(clock, target):
    for name in ("a", "b", "c"):
        create(name, schedules.Every(HOUR), target)
    clock.set(T0 + HOUR)
    out = call("--max-schedules", "2", "--passes", "5", "--lease-owner", "cli")
    lines = out.splitlines()
    assert lines[0].startswith("pass 1: claimed=2 materialized=2 ")
    assert lines[1].startswith("pass 2: claimed=1 materialized=1 ")
    assert lines[2].startswith("pass 3: claimed=0 ")  # stops after a pass that claimed nothing
    assert lines[3].startswith("total: claimed=3 materialized=3 ")
    assert len(works()) == 3


@pytest.mark.django_db
def test_command__verbosity_two_lists_each_schedule_decision(clock, target):
    create("nightly", schedules.Every(HOUR), target)
    clock.set(T0 + HOUR)
    out = call("-v", "2")
    [work_id] = [w[0] for w in works()]
    assert f"tenant-a/nightly: nominal -> work {work_id} (nominal)" in out


@pytest.mark.django_db
def test_command__a_bad_lease_is_a_command_error_with_its_code(clock):
    with pytest.raises(CommandError, match="DS404"):
        call("--lease-seconds", "601")


@pytest.mark.django_db(transaction=True)
def test_command__exit_status_is_zero_on_success_and_non_zero_on_error(committed_clock):
    ok = processes.run("--max-schedules", "5")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("pass 1: claimed=0")
    bad = processes.run("--lease-owner", " ")
    assert bad.returncode != 0
    assert "DS404" in bad.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("args", [("--claim-batch", "1001"), ("--lease-seconds", "601"),
                                  ("--lease-seconds", str(10**12)),
                                  ("--lease-owner", "bad\towner")])
def test_command__a_bad_argument_is_refused_before_the_database_is_touched(
        clock, monkeypatch, args):
    from durable_schedule.management.commands import process_schedules as command

    touched = []
    monkeypatch.setattr(command, "check_prepared_statements", lambda: touched.append(1))
    with pytest.raises(CommandError, match=r"DS\d{3}: "):
        call(*args)
    assert touched == []


@pytest.mark.django_db
@pytest.mark.parametrize("options", [{"lease_seconds": 0}, {"lease_seconds": -(10**15)},
                                     {"lease_owner": ""}])
def test_command__a_given_zero_lease_or_blank_owner_is_refused_not_defaulted(
        clock, monkeypatch, options):
    from durable_schedule.management.commands import process_schedules as command

    monkeypatch.setattr(command, "check_prepared_statements", lambda: None)
    with pytest.raises(CommandError, match="DS404: "):
        try:
            call_command("process_schedules", stdout=StringIO(), **options)
        finally:
            leave_transaction_forms()
