"""The metrics page (durable_schedule.observability.views.metrics) shows the runners' hosts,
pids and queue totals, what the admin's health dashboard shows behind the view permission on
runners. A logged-in user reads it only as active staff holding that permission
(``durable_schedule.view_runnerheartbeat``); staff status alone, or staff granted other admin
pages, is a 403. The METRICS_TOKEN path is unchanged (tests/operations/test_metrics.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import override_settings

from tests.admin.conftest import VIEW_CODENAMES

pytestmark = pytest.mark.django_db
URL = "/durable/metrics"
TOKEN = "0123456789abcdef-metrics"


def staff(username, *codenames):
    user = User.objects.create_user(username, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def test_metrics__staff_without_the_runners_permission_is_refused(client, clock):
    client.force_login(staff("plain"))
    refused = client.get(URL)
    assert refused.status_code == 403
    assert b"view_runnerheartbeat" in refused.content
    assert b"durable_schedule_store_up" not in refused.content


def test_metrics__staff_with_every_other_view_permission_is_refused(client, clock):
    # Every model page of the app but the runners one: the dashboard refuses them, so does this.
    client.force_login(staff("schedules-only", *VIEW_CODENAMES))
    assert client.get(URL).status_code == 403


def test_metrics__staff_with_the_runners_permission_and_superusers_read_it(client, clock):
    client.force_login(staff("ops", "view_runnerheartbeat"))
    page = client.get(URL)
    assert page.status_code == 200 and b"durable_schedule_store_up" in page.content
    client.force_login(User.objects.create_superuser("root", "root@x.test", "pw"))
    assert client.get(URL).status_code == 200


def test_metrics__the_permission_without_staff_is_refused_and_the_token_needs_neither(
    client, clock
):
    user = staff("not-staff", "view_runnerheartbeat")
    user.is_staff = False
    user.save()
    client.force_login(user)
    assert client.get(URL).status_code == 403
    client.logout()
    with override_settings(DURABLE_SCHEDULE={"METRICS_TOKEN": TOKEN}):
        assert client.get(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
