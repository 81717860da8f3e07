"""The pinned search_path of functions that are not SECURITY DEFINER (store/drift.py).

The migrations pin ``search_path = <app schema>, pg_temp`` on many functions, definer or not;
a ``CREATE OR REPLACE FUNCTION`` without its own ``SET`` clause drops the pin (schema 17 had to
repair ``durable_schedule_enter_scope`` and ``..._to_read``). The drift check (E003,
``durable_status``) compared proconfig only for SECURITY DEFINER functions, so a lost pin on
any other was never reported. The expected set is read from the migration SQL files (no hand
list); these tests reset a pin by hand (as the superuser owner, in the test's transaction,
rolled back with it) and see it reported, and see a clean store report nothing."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from durable_schedule.operations.status import collect
from durable_schedule.store import drift

pytestmark = pytest.mark.django_db


def problems() -> list[str]:
    return [m.msg for m in checks.run_checks() if m.id == "durable_schedule.E003"]


def non_definer_pins() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("select s from unnest(%s::text[]) s where not (select prosecdef from pg_proc"
                    " where oid = to_regprocedure(s))", [list(drift.pinned_functions())])
        return [r[0] for r in cur.fetchall()]


def test_the_expected_set_is_read_from_the_migrations():
    pinned = drift.pinned_functions()
    # Pinned by 0002 and re-pinned by schema 17 after a CREATE OR REPLACE dropped the pin.
    assert "durable_schedule_enter_scope(text)" in pinned
    assert "durable_schedule_enter_scope_to_read(text)" in pinned
    assert "durable_schedule_notify_due()" in pinned
    # Pinned by schema 9, unpinned on purpose by schema 15's CREATE OR REPLACE.
    assert "durable_work_dispatch_routing()" not in pinned
    assert "durable_schedule_enter_scope(text)" in non_definer_pins()


def test_pin_events__a_create_or_replace_drops_the_pin_until_it_is_pinned_again():
    text = """
    DO $pin$ BEGIN
        EXECUTE format('ALTER FUNCTION f(text) SET search_path = %I, pg_temp', current_schema());
    END $pin$;
    -- CREATE OR REPLACE FUNCTION g(text) in a comment is no statement
    CREATE OR REPLACE FUNCTION f(p text) RETURNS void LANGUAGE sql AS $fn$ select 1 $fn$;
    DO $pin$ DECLARE f text; BEGIN
        FOREACH f IN ARRAY ARRAY['g(text)', 'h(bigint, text)'] LOOP
            EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
        END LOOP;
    END $pin$;
    """
    assert [(kind, value) for _, kind, value in drift.pin_events(text)] == [
        ("pin", "f(text)"), ("create", "f"), ("pin", "g(text)"), ("pin", "h(bigint, text)")]


def test_a_clean_store_reports_no_unpinned_function():
    with connection.cursor() as cur:
        assert drift.unpinned_functions(cur) == []
    assert not [p for p in problems() if "pinned search_path" in p]


@pytest.mark.parametrize("signature", [
    "durable_schedule_enter_scope(text)",
    "durable_schedule_enter_scope_to_read(text)",
    "durable_schedule_notify_due()",
])
# pg_temp first: a caller's temporary objects would be resolved before the store's.
@pytest.mark.parametrize("change", ["reset search_path", "set search_path = pg_temp, public"])
def test_check__a_non_definer_function_without_its_pinned_search_path_is_reported(
        signature, change):
    with connection.cursor() as cur:
        cur.execute(f"alter function {signature} {change}")
    found = problems()
    assert f"DS304: function {signature} lacks its pinned search_path (<app schema>, pg_temp)" \
        in found, found


def test_every_non_definer_pin_is_checked():
    pins = non_definer_pins()
    assert len(pins) >= 10, pins
    with connection.cursor() as cur:
        for signature in pins:
            cur.execute(f"alter function {signature} reset search_path")
        assert drift.unpinned_functions(cur) == sorted(pins)


def test_durable_status__reports_it_as_a_problem():
    with connection.cursor() as cur:
        cur.execute("alter function durable_schedule_enter_scope(text) reset search_path")
    report = collect()
    assert any("function durable_schedule_enter_scope(text) lacks its pinned search_path" in p
               for p in report.problems), report.problems
    assert not report.healthy
