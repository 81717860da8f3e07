"""``PREPARE_STATEMENTS = None`` (auto) is decided for the alias a call runs on, not only for
the store's alias (docs/operations.md "Prepared statements and connection poolers").

Before: ``_cursor`` asked ``conf.prepare_statements()``, which looked at the store's alias
only. A project whose store alias connects directly and whose second alias goes through
PgBouncer in transaction mode (``DISABLE_SERVER_SIDE_CURSORS``) got server-side prepared
statements for ``enqueue(..., using="pooled")``: the silent statement confusion of PgBouncer
< 1.21 the auto default exists to avoid."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.db import connections

from durable_schedule import work
from durable_schedule.store import transactions
from durable_schedule.work import registry

pytestmark = pytest.mark.django_db(databases=["default", "other"])


@pytest.fixture(autouse=True)
def _close_other():
    yield
    connections["other"].close()  # else the test database cannot be dropped at the end


def _declare_pooler(monkeypatch, alias: str, **flags) -> None:
    # The alias's own settings dict (what conf reads), restored after the test.
    for key, value in flags.items():
        monkeypatch.setitem(django_settings.DATABASES[alias], key, value)


def _prepares(alias: str) -> bool:
    with transactions._cursor(connections[alias]) as cur:
        return isinstance(cur.cursor, transactions._PreparingCursor)


@pytest.mark.parametrize("flags", [{"DISABLE_SERVER_SIDE_CURSORS": True}, {"PORT": "6432"}])
def test_auto__an_alias_that_declares_a_pooler_does_not_prepare(settings, monkeypatch, flags):
    settings.DURABLE_SCHEDULE = {"PREPARE_STATEMENTS": None}
    _declare_pooler(monkeypatch, "other", **flags)
    assert _prepares("default")
    assert not _prepares("other")


def test_auto__the_store_alias_declaring_a_pooler_leaves_a_direct_alias_preparing(
        settings, monkeypatch):
    settings.DURABLE_SCHEDULE = {"PREPARE_STATEMENTS": None}
    _declare_pooler(monkeypatch, "default", DISABLE_SERVER_SIDE_CURSORS=True)
    assert not _prepares("default")
    assert _prepares("other")


@pytest.mark.parametrize("forced", [True, False])
def test_forced__true_and_false_win_on_every_alias(settings, monkeypatch, forced):
    settings.DURABLE_SCHEDULE = {"PREPARE_STATEMENTS": forced}
    _declare_pooler(monkeypatch, "other", DISABLE_SERVER_SIDE_CURSORS=True)
    assert _prepares("default") is forced
    assert _prepares("other") is forced


def test_enqueue_on_a_pooled_alias_leaves_no_prepared_statement(settings, monkeypatch, clock):
    settings.DURABLE_SCHEDULE = {"PREPARE_STATEMENTS": None}
    _declare_pooler(monkeypatch, "other", DISABLE_SERVER_SIDE_CURSORS=True)
    conn = connections["other"]
    conn.ensure_connection()
    before = _prepared(conn)
    definition = registry.define("rvstore.per_alias", "v1", safety=work.ProviderSafety.IDEMPOTENT)
    try:
        accepted = work.enqueue("per-alias", definition.request(
            command="c", idempotency_key="k", payload={}), using="other")
    finally:
        registry._unregister(definition.name, definition.version)
    assert accepted.created
    assert _prepared(conn) == before


def _prepared(conn) -> set[str]:
    with conn.cursor() as cur:
        cur.execute("select name from pg_prepared_statements where name like '\\_pg3\\_%%'")
        return {r[0] for r in cur.fetchall()}
