"""The drift check reported ``CREATE`` for PUBLIC or either role on the app schema only
(docs/security.md "Trusted functions"). The owner's statements name the store's functions
without a schema, and PostgreSQL picks the best-matching overload among *every* schema of the
search path: with ``search_path = <app schema>, extra`` (a project's ``-c search_path=...``)
and PUBLIC's ``CREATE`` on ``extra``, a login role that holds nothing else plants
``durable_schedule_enter_routed(smallint)`` there, and the owner's routed entry (a bound
Python int) runs it with the owner's rights; the check was silent. Every schema of the search
path is checked now (``durable_schedule.E003``, DS304)."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule.store import inspection

pytestmark = pytest.mark.django_db

EXTRA = "ds_path_extra"
PLANTER = "ds_path_planter"


def _problems() -> list[str]:
    with connection.cursor() as cur:
        return inspection.grant_problems(cur)


@pytest.mark.django_db(transaction=True)
def test_create_on_a_later_schema_of_the_path__runs_a_planted_overload_as_the_owner(
        pg_factory):
    admin = pg_factory(autocommit=True)
    schema = admin.execute("select current_schema()").fetchone()[0]
    admin.execute(f"drop schema if exists {EXTRA} cascade")
    admin.execute(f"drop role if exists {PLANTER}")
    admin.execute(f"create role {PLANTER} login nosuperuser nobypassrls")
    admin.execute(f"create schema {EXTRA}")
    admin.execute(f"grant usage, create on schema {EXTRA} to public")
    try:
        planter = pg_factory(user=PLANTER, autocommit=True)
        planter.execute(f"create function {EXTRA}.durable_schedule_enter_routed(p smallint)"
                        " returns text language sql"
                        " as $$ select 'planted, run as ' || current_user $$")
        planter.close()
        admin.execute(f'set search_path = "{schema}", {EXTRA}')
        owner = admin.execute("select current_user").fetchone()[0]
        got = admin.execute("select durable_schedule_enter_routed(%s)", [3],
                            prepare=True).fetchone()[0]
        assert got == f"planted, run as {owner}"
    finally:
        admin.execute(f"drop schema {EXTRA} cascade")
        admin.execute(f"drop role {PLANTER}")


@pytest.mark.parametrize("grantee", ["public", inspection.RUNTIME_ROLE])
def test_check__reports_create_on_any_schema_of_the_search_path(grantee):
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute("select current_schema()")
        schema = cur.fetchone()[0]
        cur.execute(f"create schema {EXTRA}")
        cur.execute(f"grant usage, create on schema {EXTRA} to {grantee}")
        cur.execute(f'set local search_path = "{schema}", {EXTRA}')
    who = "PUBLIC" if grantee == "public" else grantee
    problems = [p for p in _problems() if "CREATE" in p]
    assert problems == [
        f"{who} may CREATE in schema {EXTRA} of the search path: an overload it plants there "
        f"is resolved by the owner's statements (REVOKE CREATE ON SCHEMA {EXTRA} FROM {who}, "
        "or take the schema off the search path)"], problems


def test_check__a_schema_off_the_search_path_is_not_reported():
    with connection.cursor() as cur:
        cur.execute(f"create schema {EXTRA}")
        cur.execute(f"grant usage, create on schema {EXTRA} to public")
    assert _problems() == []
