"""Layer 2 of docs/admin.md "Scopes in the admin" on a store alias other than "default": with
an owner that row-level security binds, the page's scope is set on the store's connection and
the page's rows are read on that same connection, so a scoped page shows that scope's rows and
an unscoped one shows none. Everything runs inside the test's transactions (rolled back)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connections
from django.urls import reverse

from durable_schedule import schedules, work
from durable_schedule.admin import scoping
from durable_schedule.store.models import ScheduleDefinition
from durable_schedule.work import registry
from tests.alias.conftest import ALIAS, DATABASES

pytestmark = pytest.mark.django_db(databases=DATABASES)

SCHEDULES = "admin:durable_schedule_scheduledefinition_changelist"


@pytest.fixture
def bound_store(settings):
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}), "DATABASE": ALIAS}
    definition = registry.define("alias_tests.rls", "v1", safety=work.ProviderSafety.IDEMPOTENT)
    try:
        for scope in ("tenant-a", "tenant-b"):
            schedules.create(scope, f"s-{scope}", schedules.Every(timedelta(hours=1)),
                             target=definition.target(payload={}))
        role = f"durable_admin_probe_{uuid.uuid4().hex[:8]}"
        with connections[ALIAS].cursor() as cur:
            cur.execute("select current_user")
            owner = cur.fetchone()[0]
            cur.execute(f'create role "{role}" nologin nosuperuser nobypassrls inherit')
            cur.execute(f'grant "{owner}" to "{role}"')
            cur.execute(f'grant durable_runtime to "{role}"')
            cur.execute(f'set local role "{role}"')
        assert not scoping.owner_bypasses_rls()
        yield
    finally:
        registry._unregister(definition.name, definition.version)


def test_scoped_pages_read_in_scope_on_the_store_alias(client, django_user_model, bound_store):
    client.force_login(django_user_model.objects.create_superuser("root", "r@example.com", "pw"))
    unscoped = client.get(reverse(SCHEDULES))
    assert list(unscoped.context["cl"].result_list) == []
    assert unscoped.context["durable_needs_scope"] is True
    for scope in ("tenant-a", "tenant-b"):
        page = client.get(reverse(SCHEDULES) + f"?scope={scope}")
        assert [r.schedule_id for r in page.context["cl"].result_list] == [f"s-{scope}"]
    with connections[ALIAS].cursor() as cur:  # read_scope left no scope behind
        cur.execute("select coalesce(current_setting('durable_schedule.scope_id', true), '')")
        assert cur.fetchone()[0] == ""
    assert ScheduleDefinition.objects.using(ALIAS).count() == 0  # RLS binds outside a page
