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
