"""The schedule detail page of a cron schedule: the next 10 instants in local time with DST
annotations, and the expression explained in a sentence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from demo import schedule_targets
from django.urls import reverse

from durable_schedule import schedules
from durable_schedule.store.models import ScheduleDefinition

pytestmark = pytest.mark.django_db


def page(client, superuser, schedule_id):
    pk = ScheduleDefinition.objects.get(scope_id="tenant-a", schedule_id=schedule_id).pk
    client.force_login(superuser)
    response = client.get(reverse("admin:durable_schedule_scheduledefinition_change",
                                  args=[pk]))
    assert response.status_code == 200
    return response


def test_cron_detail__lists_local_instants_with_the_gap_annotated(client, superuser, clock):
    clock.set(datetime(2030, 3, 29, 12, 0, tzinfo=UTC))
    target = schedule_targets.report.target(payload={"report": "nightly"})
    schedules.create("tenant-a", "nightly", schedules.Cron("30 2 * * *", "Europe/Berlin"),
                     target)
    response = page(client, superuser, "nightly")
    cron = response.context["timeline"]["cron"]
    assert cron["explain"] == "At 02:30 (Europe/Berlin time)."
    rows = cron["instants"]
    assert len(rows) == 10
    assert [(r["local"], r["offset"]) for r in rows[:3]] == [
        ("2030-03-30 02:30:00", "+0100"), ("2030-03-31 03:00:00", "+0200"),
        ("2030-04-01 02:30:00", "+0200")]
    assert rows[1]["note"] == "shifted: 02:30:00 does not exist on 2030-03-31 (DST gap)"
    assert rows[0]["note"] == rows[2]["note"] == ""
    body = response.content.decode()
    assert 'id="cron-upcoming"' in body and "DST gap" in body


def test_cron_detail__annotates_both_passes_of_a_repeated_hour(client, superuser, clock):
    clock.set(datetime(2030, 10, 26, 23, 50, tzinfo=UTC))
    target = schedule_targets.report.target(payload={"report": "nightly"})
    schedules.create("tenant-a", "q", schedules.Cron("0,30 2 * * *", "Europe/Berlin"), target)
    notes = [(r["local"], r["note"]) for r in
             page(client, superuser, "q").context["timeline"]["cron"]["instants"][:5]]
    assert notes == [
        ("2030-10-27 02:00:00", "repeated hour, first pass"),
        ("2030-10-27 02:30:00", "repeated hour, first pass"),
        ("2030-10-28 02:00:00", ""),  # non-interval: once, in the first pass
        ("2030-10-28 02:30:00", ""),
        ("2030-10-29 02:00:00", "")]


def test_every_detail__has_no_cron_block(client, superuser, clock):
    from datetime import timedelta

    target = schedule_targets.report.target(payload={"report": "nightly"})
    schedules.create("tenant-a", "e", schedules.Every(timedelta(hours=1)), target)
    response = page(client, superuser, "e")
    assert response.context["timeline"]["cron"] is None
    assert 'id="cron-upcoming"' not in response.content.decode()
