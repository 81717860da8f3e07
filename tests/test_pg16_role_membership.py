"""docs/getting-started.md "The database user", on PostgreSQL 16 and newer: a CREATEROLE user
that creates the two roles holds them with ADMIN OPTION only, no SET (PostgreSQL 16 changed
CREATEROLE; createrole_self_grant is empty by default). Migration 0001's roles step saw a
membership (pg_has_role MEMBER) and granted nothing, so migrate succeeded and every scoped call
then failed with DS302 "permission denied to set role" (seen on a fresh PostgreSQL 18 cluster
following the page literally). After migrate the user now grants itself the membership.

Needs PostgreSQL 16 or newer (the SET option does not exist before): the tox environment
py312-django6 runs it on PostgreSQL 18; on 15 it is skipped.
"""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule.apps import _complete_role_memberships

pytestmark = pytest.mark.django_db
USER = "gs_pg16_creator"


@pytest.fixture
def pg16():
    with connection.cursor() as cur:
        cur.execute("show server_version_num")
        if int(cur.fetchone()[0]) < 160000:
            pytest.skip("PostgreSQL 16+ only: the SET option of a membership is new in 16")
        yield cur


def _may_set(cur, role: str) -> bool:
    cur.execute("select pg_has_role(%s, %s, 'SET')", [USER, role])
    return cur.fetchone()[0]


def test_pg16__a_creator_with_admin_only_gets_the_membership_after_migrate(pg16):
    cur = pg16
    cur.execute(f"create role {USER} login createrole")
    # What CREATE ROLE by a CREATEROLE user leaves on 16+: ADMIN, neither INHERIT nor SET.
    cur.execute(f"grant durable_runtime, durable_dispatcher to {USER} "
                "with admin true, inherit false, set false")
    assert not _may_set(cur, "durable_runtime")
    cur.execute(f"set local role {USER}")
    try:
        _complete_role_memberships(None, using="default")
        _complete_role_memberships(None, using="default")  # idempotent
    finally:
        cur.execute("reset role")
    assert _may_set(cur, "durable_runtime") and _may_set(cur, "durable_dispatcher")


def test_pg16__a_user_without_admin_is_left_alone(pg16):
    cur = pg16
    cur.execute(f"create role {USER} login")
    cur.execute(f"set local role {USER}")
    try:
        _complete_role_memberships(None, using="default")  # nothing it may grant: no error
    finally:
        cur.execute("reset role")
    assert not _may_set(cur, "durable_runtime")
