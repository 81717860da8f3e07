"""Issue 6 item 3: no admin page lets anyone, superusers included, add, change or delete a row
of the store: every row is a fact written by the runtime or the public API."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from durable_schedule.store import models

pytestmark = pytest.mark.django_db

REGISTERED = [models.ScheduleDefinition, models.ScheduleGeneration, models.Occurrence,
              models.ScheduleDispatch, models.ScheduleHistory, models.Scope, models.Work,
              models.WorkPermit, models.WorkQuarantine, models.WorkHistory,
              models.WorkDispatch]


def test_registry__every_store_model_but_the_singleton_has_a_page():
    registered = {m for m in admin.site._registry if m._meta.app_label == "durable_schedule"}
    # The runners' page is the health dashboard (tests/admin/test_dashboard.py): no row pages.
    assert registered == set(REGISTERED) | {models.RunnerHeartbeat}


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.model_name)
def test_model_admin__refuses_add_change_delete_to_a_superuser(rf, superuser, model):
    request = rf.get("/")
    request.user = superuser
    model_admin = admin.site._registry[model]
    assert model_admin.has_view_permission(request)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert "delete_selected" not in model_admin.get_actions(request)


def _pk(two_scopes, model):
    row = model.objects.order_by("pk").first()
    assert row is not None, f"the fixture seeds {model.__name__}"
    return row.pk


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.model_name)
def test_pages__add_change_and_delete_urls_are_forbidden(client, superuser, two_scopes, model):
    name = f"admin:durable_schedule_{model._meta.model_name}"
    pk = _pk(two_scopes, model)
    client.force_login(superuser)
    before = list(model.objects.filter(pk=pk).values())
    assert client.get(reverse(f"{name}_add")).status_code == 403
    assert client.post(reverse(f"{name}_add"), {"scope_id": "tenant-a"}).status_code == 403
    change = reverse(f"{name}_change", args=[pk])
    page = client.get(change)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode(), "a change page is read-only"
    assert client.post(change, {"scope_id": "tenant-x", "_save": "1"}).status_code == 403
    delete = reverse(f"{name}_delete", args=[pk])
    assert client.get(delete).status_code == 403
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert list(model.objects.filter(pk=pk).values()) == before


def test_index__offers_no_add_link(client, superuser, clock):
    client.force_login(superuser)
    body = client.get(reverse("admin:app_list", args=["durable_schedule"])).content.decode()
    assert "/add/" not in body

