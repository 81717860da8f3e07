"""docs/operations.md "A store on its own database alias": Django applies every app's
migrations to whichever alias ``migrate --database`` names, so without a router a plain
``migrate`` (for Django's own tables on "default") also builds a second, unused store there.
The documented router keeps durable_schedule's migrations on the store's alias only; the
store's own ``migrate --database store`` is unchanged."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connections

from durable_schedule import conf
from tests.alias.conftest import ALIAS, BARE

pytestmark = pytest.mark.django_db(databases=["default", BARE])


class StoreRouter:
    """The router of the docs, verbatim."""

    def allow_migrate(self, db, app_label, **hints):
        if app_label == "durable_schedule":
            return db == conf.database_alias()
        return None

    def db_for_read(self, model, **hints):
        if model._meta.app_label == "durable_schedule":
            return conf.database_alias()
        return None


def _has(alias: str, table: str) -> bool:
    with connections[alias].cursor() as cur:
        cur.execute("select to_regclass(%s) is not null", [table])
        return cur.fetchone()[0]


def test_router_keeps_the_store_off_another_alias(settings):
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}), "DATABASE": ALIAS}
    settings.DATABASE_ROUTERS = [f"{__name__}.StoreRouter"]
    call_command("migrate", database=BARE, verbosity=0, skip_checks=True)
    assert _has(BARE, "django_migrations")
    assert not _has(BARE, "durable_work")
    assert not _has(BARE, "durable_schedule_store")


@pytest.mark.django_db(databases=["default", ALIAS])
def test_router_sends_your_own_orm_reads_to_the_store(settings):
    from durable_schedule.store.models import Store

    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}), "DATABASE": ALIAS}
    settings.DATABASE_ROUTERS = [f"{__name__}.StoreRouter"]
    assert Store.objects.all().db == ALIAS
    assert Store.objects.count() == 1  # the store row of the store's database
