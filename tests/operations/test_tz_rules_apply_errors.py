"""``durable_tz_rules --apply`` when a schedule changed after the inventory read it, or the
database stops the command: the schedule that cannot be re-issued is named with its DS code and
the others are still re-issued (exit 1), and a database error is one DS307 line, never a
traceback (docs/operations.md "Operator commands and database errors")."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from durable_schedule import schedules
from durable_schedule.evaluation.cron import zones
from durable_schedule.operations import tz_rules
from tests.evaluation.cron.tzif import write_tzif
from tests.operations.test_command_database_errors import (  # noqa: F401  (fixture)
    lock_holder,
    lock_timeout,
    reset_lock_timeout,
)
from tests.schedules.conftest import SCOPE, create, definition

BERLIN_EARLY = "CET-1CEST,M3.2.0,M10.5.0/3"  # a simulated tz update: summer from 2nd Sunday


@pytest.mark.django_db
def test_apply__a_schedule_changed_since_the_read_is_named_and_the_others_are_reissued(
    clock, target, tmp_path, monkeypatch
):
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    create("first", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    create("second", schedules.Cron("0 18 * * *", "Europe/Berlin"), target)
    real_collect = tz_rules.collect

    def collect_then_another_operator_reissues_first(**kwargs):
        inventory = real_collect(**kwargs)
        read = {s.schedule_id: s for s in inventory.affected}
        schedules.update(
            SCOPE, "first", expected_revision=read["first"].revision, actor="another-operator"
        )
        return inventory

    monkeypatch.setattr(tz_rules, "collect", collect_then_another_operator_reissues_first)
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        out = io.StringIO()
        with pytest.raises(SystemExit) as exit_info:
            call_command("durable_tz_rules", "--apply", "--json", stdout=out)
    assert exit_info.value.code == 1
    doc = json.loads(out.getvalue())
    assert [(r["scope_id"], r["schedule_id"]) for r in doc["reissued"]] == [(SCOPE, "second")]
    assert [(r["scope_id"], r["schedule_id"]) for r in doc["refused"]] == [(SCOPE, "first")]
    assert doc["refused"][0]["error"].startswith("DS")
    assert definition("second")["active_generation"] == 2
    assert definition("first")["active_generation"] == 2  # the other operator's re-issue only


@pytest.mark.django_db(transaction=True)
def test_a_lock_held_by_another_session_is_one_ds307_line(lock_holder):  # noqa: F811
    holder = lock_holder("durable_schedule_routing")
    lock_timeout()
    try:
        with pytest.raises(CommandError) as caught:
            call_command("durable_tz_rules", "--apply", stdout=io.StringIO())
    finally:
        reset_lock_timeout()
        holder.rollback()
    text = str(caught.value)
    assert text.startswith(
        "DS307: durable_tz_rules stopped by a database error: "
        "OperationalError: canceling statement due to lock timeout"
    ), text
    assert "sqlstate='55P03'" in text and "committed_before='nothing'" in text
    assert "\n" not in text
