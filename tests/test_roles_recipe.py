"""``durable_status --roles`` is the recipe docs/getting-started.md tells a newcomer to hand to
the DBA, "the first lines it prints": it creates the roles and grants them to the project's
database user. Its membership line said ``GRANT ... TO <migration owner>;``, which PostgreSQL
refuses as a syntax error, so the DBA had to guess what to put there. It now names the
``USER`` of ``DATABASES``, quoted, and the lines run as printed.

Before the store is migrated the report printed ``roles        ok`` although no role had been
checked (they need not even exist); it now says the roles were not checked.
"""

from __future__ import annotations

import secrets
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from durable_schedule.management.commands.durable_status import _roles_line
from durable_schedule.operations.status import StatusReport
from durable_schedule.store.inspection import grant_recipe

pytestmark = pytest.mark.django_db


def _first_lines(text: str) -> list[str]:
    """The recipe's lines before the comment that says to run migrate next."""
    lines = text.splitlines()
    return lines[:next(i for i, line in enumerate(lines) if "then run `manage.py migrate`" in line)]


def test_roles_recipe__names_the_database_user_of_databases():
    out = StringIO()
    try:
        call_command("durable_status", "--roles", stdout=out)
    except SystemExit as exc:  # the report after the recipe may ask for attention
        assert exc.code in (1, 2)
    user = connection.settings_dict["USER"]
    assert f'GRANT durable_runtime, durable_dispatcher TO "{user}";' in _first_lines(
        out.getvalue())
    assert "<migration owner>" not in out.getvalue()


def test_roles_recipe__its_membership_line_runs_as_printed():
    member = f"gs Owner \"{secrets.token_hex(3)}"  # spaces, capitals and a quote survive
    with connection.cursor() as cur:
        cur.execute(f'create role "{member.replace(chr(34), chr(34) * 2)}" nologin')
        try:
            [grant] = [line for line in _first_lines(grant_recipe(member))
                       if line.startswith("GRANT")]
            cur.execute(grant)
            cur.execute("select pg_has_role(%s, 'durable_runtime', 'member'), "
                        "pg_has_role(%s, 'durable_dispatcher', 'member')", [member, member])
            assert cur.fetchone() == (True, True)
        finally:
            cur.execute(f'drop role "{member.replace(chr(34), chr(34) * 2)}"')


def test_roles_recipe__without_a_user_keeps_the_placeholder_and_explains_it():
    lines = _first_lines(grant_recipe(None))
    assert "GRANT durable_runtime, durable_dispatcher TO <migration owner>;" in lines
    assert any(line.startswith("-- <migration owner>: the database user") for line in lines)


def test_status__does_not_vouch_for_roles_it_did_not_check():
    assert _roles_line(StatusReport(migrated=False)).startswith("not checked")
    assert _roles_line(StatusReport(migrated=True, schema_version=1)).startswith("not checked")
    assert _roles_line(StatusReport(migrated=True, schema_version=99)) == "ok"
    assert "role durable_runtime is missing" in _roles_line(StatusReport(
        migrated=True, schema_version=99, role_problems=["role durable_runtime is missing"]))
