"""The tz-rules inventory (``manage.py durable_tz_rules``, ``durable_status``) covers exactly
the cron schedules whose instants the processor will still evaluate (docs/schedules.md
"Time-zone rules fingerprint"): a *paused* schedule resumes on its own grid and is suspended
with ``tz_rules_changed`` on its first pass, so it is affected and re-issued (staying paused);
a *completed* one has no instant left, is never evaluated again and cannot be re-issued (DS117),
so it is not affected and never makes the command or the status report fail."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from durable_schedule import schedules
from durable_schedule.evaluation.cron import zones
from durable_schedule.operations.status import collect
from tests.evaluation.cron.tzif import write_tzif
from tests.schedules.conftest import SCOPE, create, definition, run_pass, works

pytestmark = pytest.mark.django_db

BERLIN_EARLY = "CET-1CEST,M3.2.0,M10.5.0/3"  # a simulated tz update: summer from 2nd Sunday


def _tz_rules(*args: str) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command("durable_tz_rules", "--json", *args, stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, json.loads(out.getvalue())


def test_a_paused_cron_schedule_is_affected_and_reissued_paused(clock, target, tmp_path):
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    create("paused", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    schedules.pause(SCOPE, "paused", actor="ops")
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        code, doc = _tz_rules()
        assert code == 1
        assert [a["schedule_id"] for a in doc["affected"]] == ["paused"]
        assert collect().tz_rules_mismatches == [f"{SCOPE}/paused"]

        code, doc = _tz_rules("--apply")
        assert code == 0
        assert [r["schedule_id"] for r in doc["reissued"]] == ["paused"]
        d = definition("paused")
        assert (d["state"], d["active_generation"]) == ("paused", 2)

        # Resumed, it runs under the rules it was re-issued with: no tz_rules_changed.
        schedules.resume(SCOPE, "paused", actor="ops")
        run_pass(clock, datetime(2030, 1, 1, 11, 0, 1, tzinfo=UTC))
        d = definition("paused")
        assert (d["state"], d["suspension_reason"]) == ("active", None)
        assert len(works()) == 1


def test_a_completed_cron_schedule_is_not_affected(clock, target, tmp_path):
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    create("done", schedules.Cron("0 10 * * *", "Europe/Berlin"), target, max_runs=1)
    run_pass(clock, datetime(2030, 1, 1, 9, 0, 1, tzinfo=UTC))
    assert definition("done")["state"] == "completed"
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        code, doc = _tz_rules()
        assert (code, doc["affected"]) == (0, [])
        code, doc = _tz_rules("--apply")
        assert (code, doc["reissued"], doc["refused"]) == (0, [], [])
        report = collect()
        assert report.tz_rules_mismatches == []
        assert not any("tz rules" in p for p in report.problems)
    assert definition("done")["active_generation"] == 1


def test_apply_holds_a_schedule_suspended_for_another_reason(clock, target, tmp_path):
    """``--apply`` re-issues through ``update()``, which clears any suspension: an operator's
    stop (reason ``operator``) must not be lifted by a tz-rules repair. Such a schedule is
    listed as held (exit 1) and left suspended; the operator's own repair, an update, binds the
    rules in force then. A schedule the fence suspended (``tz_rules_changed``) is re-issued."""
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    create("stopped", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    schedules.suspend(SCOPE, "stopped", "vendor outage, do not run", actor="ops")
    create("fenced", schedules.Cron("0 18 * * *", "Europe/Berlin"), target)
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        run_pass(clock, datetime(2030, 1, 1, 17, 0, 1, tzinfo=UTC))
        assert definition("fenced")["suspension_reason"] == "tz_rules_changed"
        code, doc = _tz_rules("--apply")
        assert code == 1
        assert [r["schedule_id"] for r in doc["reissued"]] == ["fenced"]
        assert [(h["schedule_id"], h["suspension_reason"]) for h in doc["held"]] == [
            ("stopped", "operator")]
        d = definition("stopped")
        assert (d["state"], d["suspension_reason"], d["active_generation"]) == (
            "suspended", "operator", 1)
        assert definition("fenced")["state"] == "active"

        out = io.StringIO()
        try:
            call_command("durable_tz_rules", "--apply", stdout=out)
        except SystemExit as exc:
            assert exc.code == 1
        assert f"held {SCOPE}/stopped" in out.getvalue()

        # The operator's repair binds the rules in force: nothing is affected any more.
        info = schedules.get(SCOPE, "stopped")
        schedules.update(SCOPE, "stopped", expected_revision=info.revision, actor="ops")
        code, doc = _tz_rules("--apply")
        assert (code, doc["affected"], doc["held"]) == (0, [], [])
