"""Hints that tell the operator to run ``migrate`` name the alias that needs it
(docs/operations.md "A store on its own database alias"): a plain ``manage.py migrate`` migrates
"default" only and leaves a store on another alias as it is. DS402's next action and the E003
"may not SET ROLE" text said "run `manage.py migrate`" whatever the alias; they now say
``manage.py migrate --database <alias>`` where the alias is known (checks.migrate_command)."""

from __future__ import annotations

import pytest
from django.db import connections

from durable_schedule.errors import SchemaMissing
from durable_schedule.store import inspection
from durable_schedule.store.transactions import store_missing
from tests.alias.conftest import ALIAS

pytestmark = pytest.mark.django_db(databases=["default", ALIAS])
USER = "alias_hint_probe"


class _Undefined(Exception):
    """A database error as psycopg gives it for a store function that does not exist."""
    sqlstate = "42883"


def _missing_on(alias: str) -> SchemaMissing:
    exc = store_missing(_Undefined('function durable_schedule_enter_scope(text) does not exist'),
                        alias)
    assert exc is not None
    return exc


def test_ds402_on_another_alias_names_its_migrate_command():
    exc = _missing_on(ALIAS)
    assert exc.next_action == ("Run `manage.py migrate --database store` to create the "
                               "durable_schedule store.")
    assert str(exc).endswith(exc.next_action)


def test_ds402_on_default_and_without_an_alias_stays_the_plain_command():
    assert _missing_on("default").next_action == (
        "Run `manage.py migrate` to create the durable_schedule store.")
    assert SchemaMissing("the store row is missing").next_action == SchemaMissing.next_action
    assert "migrate" in SchemaMissing.next_action


def test_the_set_role_problem_on_another_alias_names_its_migrate_command():
    with connections[ALIAS].cursor() as cur:
        cur.execute(f"create role {USER} login nosuperuser")
        cur.execute("grant durable_runtime to " + USER)
        # What the check reads beyond the catalogues: the store's function list.
        cur.execute(f"grant execute on function durable_schedule_store_functions() to {USER}")
        # The check reads the session user's memberships: become that user for this
        # transaction (rolled back with the test's).
        cur.execute(f"set local session authorization {USER}")
        try:
            problems = [p for p in inspection.grant_problems(cur) if "SET ROLE" in p]
        finally:
            cur.execute("reset session authorization")
    assert problems == [
        "the database user may not SET ROLE durable_dispatcher: every transaction that enters "
        "it fails (DS302) (run manage.py migrate --database store; else a DBA runs GRANT "
        f'durable_dispatcher TO "{USER}";)']


def test_ds401_on_another_alias_names_its_migrate_command():
    from durable_schedule.errors import SchemaBelowFloor
    from durable_schedule.work.runtime import check_floor

    with connections[ALIAS].cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = 1, compatibility_floor = 1")
        with pytest.raises(SchemaBelowFloor) as caught:
            check_floor(cur)  # what every claim of process_work reads first
    assert caught.value.context["using"] == ALIAS
    assert caught.value.next_action == ("Run `manage.py migrate --database store` before "
                                        "starting this version of durable_schedule.")
    assert SchemaBelowFloor("x", using="default").next_action == SchemaBelowFloor.next_action
