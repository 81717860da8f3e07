"""Issue 12 item 6: `check --deploy` warns about a superuser/BYPASSRLS owner, pooler settings
with prepared statements on, and a missing partition for next month."""

from __future__ import annotations

import pytest
from django.test import override_settings

from durable_schedule.operations.deploy_checks import check_deployment

pytestmark = pytest.mark.django_db


def ids() -> list[str]:
    return [m.id for m in check_deployment()]


def test_deploy__the_superuser_test_owner_is_flagged(clock, pg):
    # The test database user is the server's superuser (postgres).
    assert pg.execute("select rolsuper from pg_roles where rolname = current_user").fetchone()[0]
    messages = {m.id: m for m in check_deployment()}
    assert "durable_schedule.W010" in messages
    assert "is a superuser" in messages["durable_schedule.W010"].msg


def test_deploy__a_plain_owner_is_not_flagged(clock):
    from django.db import connection

    from durable_schedule.operations import deploy_checks

    with connection.cursor() as cur:
        cur.execute("create role ds_plain_owner nosuperuser nobypassrls")
        cur.execute("create role ds_bypass_owner nosuperuser bypassrls")
        cur.execute("set local role ds_plain_owner")
        assert deploy_checks._owner_flags(cur) == []
        cur.execute("set local role ds_bypass_owner")
        [warning] = deploy_checks._owner_flags(cur)
        assert warning.id == "durable_schedule.W010" and "is BYPASSRLS" in warning.msg
        cur.execute("reset role")


def test_deploy__pooler_settings_with_prepared_statements_warn(clock, settings):
    settings.DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    try:
        # The default (None) does not prepare behind a declared pooler: nothing to warn about.
        with override_settings(DURABLE_SCHEDULE={}):
            assert "durable_schedule.W011" not in ids()
        with override_settings(DURABLE_SCHEDULE={"PREPARE_STATEMENTS": True}):
            assert "durable_schedule.W011" in ids()
        with override_settings(DURABLE_SCHEDULE={"PREPARE_STATEMENTS": False}):
            assert "durable_schedule.W011" not in ids()
    finally:
        settings.DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = False
    assert "durable_schedule.W011" not in ids()


def test_deploy__a_missing_next_month_partition_warns(clock):
    from io import StringIO

    from django.core.management import call_command

    call_command("durable_partitions", stdout=StringIO())
    assert "durable_schedule.W012" not in ids()
    clock.set(clock.now.replace(month=2, day=20))  # March is not there yet
    messages = [m for m in check_deployment() if m.id == "durable_schedule.W012"]
    assert [m.msg for m in messages] == ["history partition durable_schedule_history_203003 is "
                                         "missing"]


def test_deploy__runs_from_check_deploy(clock):
    from io import StringIO

    from django.core.management import call_command

    out, err = StringIO(), StringIO()
    call_command("check", "--deploy", stdout=out, stderr=err)
    assert "durable_schedule.W010" in out.getvalue() + err.getvalue()


def test_deploy__a_controlled_clock_left_in_place_warns(clock):
    # A test's ControlledClock run against this database by mistake freezes protocol time:
    # nothing falls due and no lease expires, silently. check --deploy names it (W014).
    assert "durable_schedule.W014" in ids()
    clock.restore()
    assert "durable_schedule.W014" not in ids()
