"""docs/getting-started.md "The database user": a user that may neither create the store's
roles nor join them needs a DBA. ``migrate`` stopped such a user in the middle of migration
0001 with PostgreSQL's bare ``must have admin option on role "durable_runtime"`` (no DS code,
no word of what to do) when the roles existed already (another database's owner created them,
or PostgreSQL 16+ where CREATEROLE no longer grants others' roles). It now stops before
anything is migrated with DS304 and the exact GRANT the DBA runs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.management import CommandError
from django.db import connection

from durable_schedule.apps import _refuse_roles_the_owner_cannot_join, roles_problem
from durable_schedule.store.sqlfiles import query

pytestmark = pytest.mark.django_db
USER = "gs_precheck_user"
PLAN = [(SimpleNamespace(app_label="durable_schedule", name="0001_initial"), False)]


@pytest.fixture
def plain_user():
    """A LOGIN role with no CREATEROLE, entered for the test's transaction (rolled back)."""
    with connection.cursor() as cur:
        cur.execute(f"create role {USER} login nocreaterole")
        cur.execute(f"set local role {USER}")
        try:
            yield cur
        finally:
            cur.execute("reset role")


def test_migrate_precheck__a_user_that_cannot_join_existing_roles_gets_ds304_and_the_grant(
        plain_user):
    problem = roles_problem(plain_user)
    assert problem is not None and problem.code == "DS304"
    text = str(problem)
    assert f'GRANT durable_runtime, durable_dispatcher TO "{USER}";' in text
    assert "Nothing was migrated" in text and "CREATE ROLE" not in text.split("—")[0]
    with pytest.raises(CommandError, match=r"^DS304: .*GRANT durable_runtime"):
        _refuse_roles_the_owner_cannot_join(None, using="default", plan=PLAN)


def test_migrate_precheck__a_member_passes_and_other_plans_are_not_checked(plain_user):
    # Without 0001 in the plan (the store is migrated already) nothing is read or refused.
    _refuse_roles_the_owner_cannot_join(None, using="default", plan=[])
    plain_user.execute("reset role")
    plain_user.execute(f"grant durable_runtime, durable_dispatcher to {USER}")
    plain_user.execute(f"set local role {USER}")
    assert roles_problem(plain_user) is None
    _refuse_roles_the_owner_cannot_join(None, using="default", plan=PLAN)


def test_migrate_precheck__a_missing_role_needs_createrole(plain_user):
    plain_user.execute(query("inspection_queries.sql", "roles_owner_cannot_join"),
                       [["durable_precheck_absent_role"]])
    assert plain_user.fetchall() == [("durable_precheck_absent_role", True)]


def test_migrate_precheck__a_superuser_passes():
    with connection.cursor() as cur:
        assert roles_problem(cur) is None
