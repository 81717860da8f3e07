"""Adversarial review of the admin's repair actions (issue 14 item 2): every suspension reason
the processor records has its one documented fix on the detail page, and the fix works."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from demo import schedule_targets
from django.urls import reverse

from durable_schedule import schedules
from durable_schedule.evaluation.cron import zones
from durable_schedule.store.models import ScheduleDefinition
from tests.admin.test_actions import confirm, messages_of
from tests.evaluation.cron.tzif import write_tzif
from tests.schedules.conftest import SCOPE, definition, run_pass
from tests.schedules.test_cron import BERLIN_EARLY

pytestmark = pytest.mark.django_db
CHANGE = "admin:durable_schedule_scheduledefinition_change"


def test_a_tz_rules_suspension_is_repaired_by_the_offered_reissue(csrf_client, superuser,
                                                                  clock, tmp_path):
    """A cron generation whose time-zone rules changed is suspended ``tz_rules_changed``; its
    documented fix is a new generation bound to the rules in force (``update``), so the
    detail page offers *Re-issue as a new generation…* -- not nothing, and not a release."""
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    target = schedule_targets.report.target(payload={"report": "noon"})
    schedules.create(SCOPE, "noon", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="noon").pk
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        run_pass(clock, datetime(2030, 1, 1, 11, 0, 1, tzinfo=UTC))
        assert definition("noon")["suspension_reason"] == "tz_rules_changed"
        csrf_client.force_login(superuser)
        page = csrf_client.get(reverse(CHANGE, args=[pk]))
        ops = [op["name"] for op in page.context["operations"]]
        assert [op for op in ops if op in ("release", "reissue")] == ["reissue"]
        [message] = messages_of(confirm(csrf_client, "reissue", pk))
        assert "re-issued as generation 2, now active" in message
        run_pass(clock, datetime(2030, 1, 1, 11, 0, 2, tzinfo=UTC))
        assert definition("noon")["state"] == "active"  # bound to the current rules now
