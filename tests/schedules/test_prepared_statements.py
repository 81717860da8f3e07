"""DURABLE_SCHEDULE["PREPARE_STATEMENTS"] (docs/operations.md "Prepared statements and
connection poolers"): the transaction forms run our SQL as server-side prepared statements on
the Django connection, whatever DATABASES' OPTIONS say, and the setting turns that off."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule import schedules
from durable_schedule.store.transactions import routed, scoped
from tests.schedules.conftest import HOUR, SCOPE, T0, create, run_pass

pytestmark = pytest.mark.django_db


def prepared() -> set[str]:
    with connection.cursor() as cur:
        cur.execute("select statement from pg_prepared_statements where from_sql = false")
        return {row[0] for row in cur.fetchall()}


def test_pass__runs_the_named_queries_prepared(clock, target):
    create("s1", schedules.Every(HOUR), target)
    counts = run_pass(clock, at=T0 + HOUR)
    assert counts.materialized == 1
    statements = prepared()
    assert any("durable_schedule_enter_routed" in s for s in statements)
    assert any("FOR SHARE OF st, sc" in s for s in statements)  # the fence statement


def test_scoped__shares_the_connection_adapters(clock):
    with scoped(SCOPE) as cur:
        cur.execute("select %(doc)s::jsonb, now()", {"doc": '{"a": 1}'})
        doc, now = cur.fetchone()
    assert doc == '{"a": 1}'  # Django's jsonb loader: text, decoded by the caller
    assert now.tzinfo is not None


def test_setting_off__uses_djangos_cursor(clock, settings):
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}),
                                 "PREPARE_STATEMENTS": False}
    before = prepared()
    with scoped(SCOPE) as cur:
        cur.execute("select 41 + %(one)s", {"one": 1})
        assert cur.fetchone()[0] == 42
    with routed(10**9) as (cur, scope_id):
        assert scope_id is None
    assert prepared() == before


def _runs_prepared(marker: str) -> bool:
    with scoped(SCOPE) as cur:
        cur.execute(f"select 41 + %(one)s /* {marker} */", {"one": 1})
        assert cur.fetchone()[0] == 42
    return any(marker in s for s in prepared())


@pytest.fixture
def declared_pooler(settings):
    """The alias declares a transaction pooler the way Django documents it."""
    settings.DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    try:
        yield
    finally:
        settings.DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = False


def _with(settings, **values):
    base = {k: v for k, v in getattr(settings, "DURABLE_SCHEDULE", {}).items()
            if k != "PREPARE_STATEMENTS"}
    settings.DURABLE_SCHEDULE = {**base, **values}


def test_default__does_not_prepare_behind_a_declared_transaction_pooler(
        clock, settings, declared_pooler):
    _with(settings)  # the default: None (auto)
    assert not _runs_prepared("auto_declared_pooler")


def test_default__prepares_without_a_declared_pooler(clock, settings):
    _with(settings)
    assert _runs_prepared("auto_direct")


def test_default__does_not_prepare_on_pgbouncers_port(clock, settings):
    _with(settings)
    from durable_schedule import conf
    settings.DATABASES["default"]["PORT"], old = "6432", settings.DATABASES["default"].get("PORT")
    try:
        assert conf.prepare_statements() is False
    finally:
        settings.DATABASES["default"]["PORT"] = old


def test_explicit_true__prepares_behind_a_declared_pooler(clock, settings, declared_pooler):
    _with(settings, PREPARE_STATEMENTS=True)
    assert _runs_prepared("explicit_true_declared_pooler")


def test_explicit_false__does_not_prepare_without_a_declared_pooler(clock, settings):
    _with(settings, PREPARE_STATEMENTS=False)
    assert not _runs_prepared("explicit_false_direct")


@pytest.mark.parametrize("value", ["yes", 1, 0, "auto"])
def test_setting__other_values_are_refused(settings, value):
    from durable_schedule import conf
    _with(settings, PREPARE_STATEMENTS=value)
    with pytest.raises(ValueError, match="PREPARE_STATEMENTS"):
        conf.validate()
