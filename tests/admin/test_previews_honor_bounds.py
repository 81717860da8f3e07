"""The admin's previews list only instants the schedule can still run, as the processor and
the API decide them (docs/schedules.md "Bounds and limits"): the cron block of the detail page
lists none after the generation's ``end_at`` and no more than ``max_runs`` leaves, and the
re-issue confirmation page starts at ``start_at`` and stops where ``max_runs`` does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from demo import schedule_targets
from django.urls import reverse

from durable_schedule import schedules
from durable_schedule.store.models import ScheduleDefinition
from tests.admin.test_actions import confirm, messages_of, operate_url
from tests.admin.test_lifecycle_actions import make, suspend_for
from tests.schedules.conftest import T0, TEN

pytestmark = pytest.mark.django_db


def upcoming(client, superuser, schedule_id):
    pk = ScheduleDefinition.objects.get(scope_id="tenant-a", schedule_id=schedule_id).pk
    client.force_login(superuser)
    response = client.get(reverse("admin:durable_schedule_scheduledefinition_change", args=[pk]))
    assert response.status_code == 200
    return response, [row["utc"] for row in response.context["timeline"]["cron"]["instants"]]


def daily_at_six(schedule_id, **bounds):
    """A ``Cron("0 6 * * *", "UTC")`` report schedule in tenant-a with the given bounds."""
    target = schedule_targets.report.target(payload={})
    schedules.create("tenant-a", schedule_id, schedules.Cron("0 6 * * *", "UTC"), target, **bounds)


def test_cron_upcoming__stops_at_end_at(client, superuser, clock):
    clock.set(datetime(2030, 1, 1, 12, 0, tzinfo=UTC))
    daily_at_six("three-days", end_at=datetime(2030, 1, 4, 6, 0, tzinfo=UTC))
    response, instants = upcoming(client, superuser, "three-days")
    assert instants == [datetime(2030, 1, d, 6, 0, tzinfo=UTC) for d in (2, 3, 4)]
    assert (
        "No instant after the generation's end_at, 2030-01-04 06:00:00 UTC."
        in response.content.decode()
    )


def test_cron_upcoming__counts_the_runs_max_runs_leaves(client, superuser, clock):
    clock.set(datetime(2030, 1, 1, 12, 0, tzinfo=UTC))
    daily_at_six("twice", max_runs=2)
    response, instants = upcoming(client, superuser, "twice")
    assert instants == [
        datetime(2030, 1, 2, 6, 0, tzinfo=UTC),
        datetime(2030, 1, 3, 6, 0, tzinfo=UTC),
    ]
    block = response.content.decode().split('id="cron-upcoming"')[1].split("</table>")[0]
    assert "2030-01-04" not in block
    assert "max_runs (2) leaves 2 runs." in block


def test_cron_upcoming__without_bounds_lists_ten_instants(client, superuser, clock):
    clock.set(datetime(2030, 1, 1, 12, 0, tzinfo=UTC))
    daily_at_six("daily", max_runs=10, end_at=datetime(2030, 1, 11, 6, 0, tzinfo=UTC))
    response, instants = upcoming(client, superuser, "daily")
    assert instants == [datetime(2030, 1, d, 6, 0, tzinfo=UTC) for d in range(2, 12)]
    assert 'id="cron-cut"' not in response.content.decode()


def test_reissue_preview__starts_at_start_at_as_the_new_generation_does(
    csrf_client, superuser, clock
):
    clock.set(T0)
    pk = make("later", start_at=T0 + timedelta(hours=2))
    suspend_for(pk, "operator")
    clock.set(T0 + TEN + TEN // 2)  # 12:15: the new generation's grid is 12:15 + k * 10 min
    csrf_client.force_login(superuser)
    [(_, preview)] = csrf_client.get(operate_url("reissue", pk)).context["previews"]
    assert preview["instants"][:2] == ["2030-01-01 14:05:00 UTC", "2030-01-01 14:15:00 UTC"]
    [message] = messages_of(confirm(csrf_client, "reissue", pk))
    assert "next instant 2030-01-01 14:05:00 UTC" in message


def test_reissue_preview__lists_no_more_instants_than_max_runs_leaves(
    csrf_client, superuser, clock
):
    clock.set(T0)
    pk = make("twice", max_runs=2)
    suspend_for(pk, "operator")
    csrf_client.force_login(superuser)
    [(_, preview)] = csrf_client.get(operate_url("reissue", pk)).context["previews"]
    assert preview["instants"] == ["2030-01-01 12:10:00 UTC", "2030-01-01 12:20:00 UTC"]
