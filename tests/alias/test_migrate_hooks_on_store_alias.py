"""The migrate hooks of apps.py on every alias the store lives on (docs/getting-started.md "The
database user"; docs/operations.md "A store on its own database alias").

The store lives on DURABLE_SCHEDULE['DATABASE'] and on every alias a durable tasks backend names
in ``OPTIONS["DATABASE"]`` (the aliases ``manage.py check`` reads, checks.store_aliases). The
pre-migrate DS304 refusal and the post-migrate membership completion acted on the store's alias
only: ``migrate --database <backend alias>`` by a user that cannot join the roles failed inside
migration 0001 with PostgreSQL's bare "must have admin option on role", and on PostgreSQL 16+ a
CREATEROLE creator kept ADMIN OPTION only there, so every call on that alias failed with DS302.
A migrate of an alias the store does not live on is still left alone.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.management import CommandError
from django.db import connections
from django.test.utils import CaptureQueriesContext

from durable_schedule.apps import _complete_role_memberships, _refuse_roles_the_owner_cannot_join
from tests.alias.conftest import BARE

pytestmark = pytest.mark.django_db(databases=["default", BARE])
USER = "alias_hooks_user"
PLAN = [(SimpleNamespace(app_label="durable_schedule", name="0001_initial"), False)]


@pytest.fixture
def backend_on_bare(settings):
    """A durable tasks backend whose OPTIONS["DATABASE"] is the unmigrated alias ``bare``."""
    settings.TASKS = {**settings.TASKS, "tenant": {
        "BACKEND": "durable_schedule.tasks.DurableBackend",
        "OPTIONS": {"SCOPE": "demo", "DATABASE": BARE}}}
    return BARE


@pytest.fixture
def plain_user_on_bare():
    """A LOGIN role with neither CREATEROLE nor membership, entered on ``bare``'s connection for
    the test's transaction (rolled back; roles are cluster-wide, the test's transaction is not
    committed)."""
    with connections[BARE].cursor() as cur:
        cur.execute(f"create role {USER} login nocreaterole")
        cur.execute(f"set local role {USER}")
        try:
            yield cur
        finally:
            cur.execute("reset role")


def test_migrating_a_tasks_backend_alias_refuses_an_unjoinable_user_with_ds304(
        backend_on_bare, plain_user_on_bare):
    with pytest.raises(CommandError, match=r"^DS304: .*GRANT durable_runtime"):
        _refuse_roles_the_owner_cannot_join(None, using=BARE, plan=PLAN)


def test_migrating_an_alias_the_store_does_not_live_on_is_left_alone(plain_user_on_bare):
    # No backend names ``bare`` and the store is on "default": its plan lists 0001 too (every
    # app's migrations), yet it is not the store's migrate to refuse.
    _refuse_roles_the_owner_cannot_join(None, using=BARE, plan=PLAN)


def _completion_queries(alias: str) -> list[str]:
    with CaptureQueriesContext(connections[alias]) as captured:
        _complete_role_memberships(None, using=alias)
    return [q["sql"] for q in captured.captured_queries]


def test_after_migrating_a_tasks_backend_alias_the_memberships_are_completed_there(
        backend_on_bare):
    # On PostgreSQL 15 there is nothing to grant, but the catalog is read on that alias
    # (on 16+ the test below shows the grant itself).
    assert any("roles_owner_may_grant_itself_set" in sql or "pg_has_role" in sql
               for sql in _completion_queries(BARE))


def test_after_migrating_an_alias_the_store_does_not_live_on_nothing_is_read():
    assert _completion_queries(BARE) == []


def test_pg16__a_creator_with_admin_only_gets_the_membership_on_a_backend_alias(
        backend_on_bare):
    """PostgreSQL 16+ only (the SET option of a membership is new in 16): the tox environment
    py312-django6 runs it on PostgreSQL 18; on 15 it is skipped."""
    with connections[BARE].cursor() as cur:
        cur.execute("show server_version_num")
        if int(cur.fetchone()[0]) < 160000:
            pytest.skip("PostgreSQL 16+ only: the SET option of a membership is new in 16")
        cur.execute(f"create role {USER} login createrole")
        cur.execute(f"grant durable_runtime, durable_dispatcher to {USER} "
                    "with admin true, inherit false, set false")
        cur.execute(f"set local role {USER}")
        try:
            _complete_role_memberships(None, using=BARE)
        finally:
            cur.execute("reset role")
        cur.execute("select pg_has_role(%s, 'durable_runtime', 'SET') "
                    "and pg_has_role(%s, 'durable_dispatcher', 'SET')", [USER, USER])
        assert cur.fetchone()[0]
