"""The admin reads the store through DURABLE_SCHEDULE['DATABASE'] (docs/admin.md, docs/api.md
"Settings"), the connection scoping.read_scope sets the scope on; never the "default" router.

Before: every admin queryset (change lists, change pages, the timeline's rows, the scope
filter's choices, the action's selection) went to Django's default router, i.e. the "default"
database: with the store on another alias the pages listed nothing, a change page was a 404, and
the scope transaction was opened on one connection while the rows were read on another."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from durable_schedule import schedules, work
from durable_schedule.store.models import ScheduleDefinition, Work
from tests.admin.test_actions import revisions_from
from tests.alias.conftest import ALIAS, DATABASES

pytestmark = pytest.mark.django_db(transaction=True, databases=DATABASES)

SCHEDULES = "admin:durable_schedule_scheduledefinition_changelist"
WORKS = "admin:durable_schedule_work_changelist"


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def report():
    return work.lookup("alias_tests.report", "v1") or work.define(
        "alias_tests.report", "v1", safety=work.ProviderSafety.IDEMPOTENT)


def _schedule(report):
    return schedules.create("tenant-s", "nightly", schedules.Every(timedelta(hours=1)),
                            target=report.target(payload={}), actor="deploy")


def test_schedule_pages_read_the_store_alias(client, superuser, on_store, report):
    _schedule(report)
    client.force_login(superuser)
    for query in ("?scope=tenant-s", ""):
        listed = client.get(reverse(SCHEDULES) + query)
        assert listed.status_code == 200
        assert [r.schedule_id for r in listed.context["cl"].result_list] == ["nightly"], query
    pk = ScheduleDefinition.objects.using(ALIAS).get(schedule_id="nightly").pk
    detail = client.get(reverse("admin:durable_schedule_scheduledefinition_change", args=[pk])
                        + "?scope=tenant-s")
    assert detail.status_code == 200
    assert b"nightly" in detail.content


def test_scope_filter_offers_the_store_alias_scopes(client, superuser, on_store, report):
    _schedule(report)
    client.force_login(superuser)
    listed = client.get(reverse(SCHEDULES))
    [scope_filter] = [f for f in listed.context["cl"].filter_specs
                      if getattr(f, "parameter_name", None) == "scope"]
    assert list(scope_filter.lookup_choices) == [("tenant-s", "tenant-s")]


def test_work_pages_read_the_store_alias(client, superuser, on_store, report):
    accepted = work.enqueue("tenant-w", report.request(command="c", idempotency_key="k",
                                                       payload={}))
    client.force_login(superuser)
    listed = client.get(reverse(WORKS) + "?scope=tenant-w")
    assert [r.work_id for r in listed.context["cl"].result_list] == [accepted.work_id]
    pk = Work.objects.using(ALIAS).get(work_id=accepted.work_id).pk
    detail = client.get(reverse("admin:durable_schedule_work_change", args=[pk])
                        + "?scope=tenant-w")
    assert detail.status_code == 200


def test_suspend_action_on_the_store_alias(client, superuser, on_store, report):
    _schedule(report)
    client.force_login(superuser)
    pk = ScheduleDefinition.objects.using(ALIAS).get(schedule_id="nightly").pk
    url = (reverse("admin:durable_schedule_scheduledefinition_operate", args=["suspend"])
           + f"?ids={pk}&scope=tenant-s")
    page = client.get(url)
    assert page.status_code == 200
    client.post(url, {"ids": str(pk), "reason": "vendor outage", **revisions_from(page)})
    assert schedules.get("tenant-s", "nightly").state == "suspended"


def test_dashboard_lists_the_store_alias_suspensions(client, superuser, on_store, report):
    _schedule(report)
    schedules.suspend("tenant-s", "nightly", "vendor outage", actor="ops")
    client.force_login(superuser)
    page = client.get(reverse("admin:durable_schedule_runnerheartbeat_changelist"))
    assert page.status_code == 200
    assert [s["s"].schedule_id for s in page.context["suspended"]] == ["nightly"]
    pk = ScheduleDefinition.objects.using(ALIAS).get(schedule_id="nightly").pk
    assert f"ids={pk}&amp;scope=tenant-s" in page.content.decode()


def test_cancel_work_action_on_the_store_alias(client, superuser, on_store, report):
    accepted = work.enqueue("tenant-w", report.request(command="c", idempotency_key="k",
                                                       payload={}))
    client.force_login(superuser)
    pk = Work.objects.using(ALIAS).get(work_id=accepted.work_id).pk
    url = (reverse("admin:durable_schedule_work_operate", args=["cancel_work"])
           + f"?ids={pk}&scope=tenant-w")
    assert client.get(url).status_code == 200
    client.post(url, {"ids": str(pk), "confirm": "on"})
    assert work.get("tenant-w", accepted.work_id).state == "canceled"
