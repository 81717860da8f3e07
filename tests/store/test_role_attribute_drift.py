"""Both roles are ``NOLOGIN NOSUPERUSER NOBYPASSRLS`` and hold no other role attribute
(docs/security.md "Roles"); the drift check compared only SUPERUSER and BYPASSRLS. A runtime
that may log in is a login that sets any scope (any role may) and reads it; one with
CREATEROLE mints such a login itself or grants itself any non-superuser role, the owner's
included; REPLICATION streams every row past row-level security. Each is reported now
(``durable_schedule.E003``, DS304). Made in the test's own transaction, rolled back."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from durable_schedule.store import inspection
from tests.pgroles import RUNTIME, become

pytestmark = pytest.mark.django_db


def _problems() -> list[str]:
    with connection.cursor() as cur:
        return inspection.grant_problems(cur)


def test_a_runtime_with_createrole__mints_a_login_that_is_the_runtime(pg):
    # Why it matters, on the real role: no grant shows it, yet the runtime mints logins on the
    # server; before PostgreSQL 16 it also hands itself out to them (16 made granting a role
    # need the ADMIN option on it, which CREATEROLE no longer implies).
    with pg.cursor() as cur:
        cur.execute("show server_version_num")
        before_16 = int(cur.fetchone()[0]) < 160000
        cur.execute("alter role durable_runtime createrole")
        become(cur, RUNTIME)
        cur.execute("create role ds_probe_minted login")
        cur.execute("select rolcanlogin from pg_roles where rolname = 'ds_probe_minted'")
        assert cur.fetchone()[0] is True
        if not before_16:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                cur.execute("grant durable_runtime to ds_probe_minted")
            return
        cur.execute("grant durable_runtime to ds_probe_minted")
        cur.execute("select pg_has_role('ds_probe_minted', 'durable_runtime', 'MEMBER')")
        assert cur.fetchone()[0] is True


@pytest.mark.parametrize("role", ["durable_runtime", "durable_dispatcher"])
@pytest.mark.parametrize("flag", ["LOGIN", "CREATEROLE", "REPLICATION"])
def test_check__reports_a_role_attribute_beyond_the_contract(role, flag):
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute(f"alter role {role} {flag}")
    problems = _problems()
    assert any(f"role {role} has {flag}" in p and f"ALTER ROLE {role} NO{flag}" in p
               for p in problems), problems
