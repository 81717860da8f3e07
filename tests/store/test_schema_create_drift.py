"""Nobody but the owner may CREATE in the store's schema (docs/security.md "Trusted
functions"): the pinned search path of the store's functions is ``<app schema>, pg_temp``, and
the owner's own statements name the store's functions and tables without a schema. A role that
may create objects in that schema plants an overload there -- ``durable_schedule_enter_routed
(smallint)`` beside the store's ``(bigint)`` -- which PostgreSQL prefers for the owner's call
with a small integer, and runs with the owner's rights. PostgreSQL 15 gives PUBLIC no CREATE on
``public``, but a cluster upgraded from an older version keeps the old ``CREATE`` for PUBLIC,
and ``GRANT ALL ON SCHEMA public TO PUBLIC`` is a common fix for "permission denied for schema
public". The drift check (``durable_schedule.E003``, DS304) reports CREATE on the schema held by
PUBLIC or by either runtime role; tested with a real non-superuser login role planting the
overload."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from durable_schedule.store import inspection

pytestmark = pytest.mark.django_db

PLANTER = "ds_schema_planter"
PLANT = (
    "create function durable_schedule_enter_routed(p smallint) returns text"
    " language sql as $$ select 'planted, run as ' || current_user $$"
)


def _problems() -> list[str]:
    with connection.cursor() as cur:
        return inspection.grant_problems(cur)


def _schema() -> str:
    with connection.cursor() as cur:
        cur.execute("select current_schema()")
        return cur.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_role_that_may_create_in_the_schema__runs_its_code_as_the_owner(pg_factory):
    # Why it matters, shown with a real login role that holds nothing but PUBLIC's CREATE.
    admin = pg_factory(autocommit=True)
    schema = admin.execute("select current_schema()").fetchone()[0]
    admin.execute(f"drop role if exists {PLANTER}")
    admin.execute(f"create role {PLANTER} login nosuperuser nobypassrls")
    admin.execute(f'grant create on schema "{schema}" to public')
    try:
        planter = pg_factory(user=PLANTER, autocommit=True)
        planter.execute(PLANT)
        planter.close()
        # The owner's routed entry, as store/transactions.py sends it (a bound Python int).
        owner = admin.execute("select current_user").fetchone()[0]
        got = admin.execute(
            "select durable_schedule_enter_routed(%s)", [3], prepare=True
        ).fetchone()[0]
        assert got == f"planted, run as {owner}"
    finally:
        admin.execute("drop function if exists durable_schedule_enter_routed(smallint)")
        admin.execute(f'revoke create on schema "{schema}" from public')
        admin.execute(f"drop role {PLANTER}")


def test_check__reports_create_on_the_schema_for_public():
    schema = _schema()
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute(f'grant create on schema "{schema}" to public')
    problems = _problems()
    public = [p for p in problems if "CREATE" in p]
    # PUBLIC's grant is named once, not again for each role that holds it through PUBLIC.
    assert len(public) == 1, problems
    assert public[0].startswith(f"PUBLIC may CREATE in schema {schema}"), problems
    assert f"REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC" in public[0], problems


@pytest.mark.parametrize("role", [inspection.RUNTIME_ROLE, inspection.DISPATCHER_ROLE])
def test_check__reports_create_on_the_schema_for_either_role(role):
    schema = _schema()
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute(f'grant create on schema "{schema}" to {role}')
    problems = [p for p in _problems() if "CREATE" in p]
    assert problems == [
        f"{role} may CREATE in schema {schema}: a function or table it plants "
        "there is resolved by the store's functions and the owner's statements "
        f"(REVOKE CREATE ON SCHEMA {schema} FROM {role})"
    ], problems


def test_check__reports_create_through_a_role_either_role_is_a_member_of():
    schema = _schema()
    with connection.cursor() as cur:
        cur.execute("create role ds_schema_creators nologin")
        cur.execute(f'grant create on schema "{schema}" to ds_schema_creators')
        cur.execute(f"grant ds_schema_creators to {inspection.RUNTIME_ROLE}")
    problems = _problems()
    assert any(
        p.startswith(f"{inspection.RUNTIME_ROLE} may CREATE in schema {schema}") for p in problems
    ), problems


def test_check__the_usage_the_roles_need_is_not_reported(pg):
    # USAGE (the roles resolve the store's objects) is the contract; only CREATE widens.
    with pg.cursor() as cur:
        cur.execute(
            "select has_schema_privilege(%s, current_schema(), 'USAGE'),"
            " has_schema_privilege(%s, current_schema(), 'USAGE')",
            [inspection.RUNTIME_ROLE, inspection.DISPATCHER_ROLE],
        )
        assert cur.fetchone() == (True, True)
    assert _problems() == []


def test_planting_needs_create__a_login_role_without_it_is_refused(pg_factory):
    # With the default (PostgreSQL 15) schema privileges the same plant fails.
    admin = pg_factory(autocommit=True)
    admin.execute(f"drop role if exists {PLANTER}")
    admin.execute(f"create role {PLANTER} login nosuperuser nobypassrls")
    try:
        planter = pg_factory(user=PLANTER, autocommit=True)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            planter.execute(PLANT)
        planter.close()
    finally:
        admin.execute(f"drop role {PLANTER}")
