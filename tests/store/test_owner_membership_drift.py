"""The Django database user enters both roles with ``SET LOCAL ROLE`` (docs/security.md
"Roles": migration 0001 grants it membership when it is not a superuser); "the check reports
drift in both directions. Missing: a grant, a function, a role". A missing membership was not
reported: ``manage.py check`` was silent, and every scoped call or claim then failed with
DS302 at run time. Shown with a real non-superuser login role as the database user."""

from __future__ import annotations

import pytest

from durable_schedule.store import inspection

USER = "ds_membership_probe"


@pytest.fixture
def login_role(pg_factory):
    admin = pg_factory(autocommit=True)
    admin.execute(f"drop role if exists {USER}")
    admin.execute(f"create role {USER} login nosuperuser nobypassrls")
    # What the check reads beyond the catalogues: the store's function list.
    admin.execute(f"grant execute on function durable_schedule_store_functions() to {USER}")
    admin.execute(f"grant durable_runtime to {USER}")
    try:
        yield admin
    finally:
        admin.execute(f"revoke execute on function durable_schedule_store_functions()"
                      f" from {USER}")
        admin.execute(f"revoke durable_runtime, durable_dispatcher from {USER}")
        admin.execute(f"drop role {USER}")


@pytest.mark.django_db(transaction=True)
def test_check__reports_a_role_the_database_user_may_not_enter(pg_factory, login_role):
    user = pg_factory(user=USER)
    with user.cursor() as cur:
        # As the runtime does: the switch the check now predicts fails.
        with pytest.raises(Exception, match="permission denied to set role"):
            cur.execute("select set_config('role', 'durable_dispatcher', true)")
    user.rollback()
    with user.cursor() as cur:
        problems = inspection.grant_problems(cur)
    assert [p for p in problems if "SET ROLE" in p] == [
        "the database user may not SET ROLE durable_dispatcher: every transaction that enters "
        "it fails (DS302) (run manage.py migrate; else a DBA runs GRANT durable_dispatcher "
        f'TO "{USER}";)'], problems
    login_role.execute(f"grant durable_dispatcher to {USER}")
    with user.cursor() as cur:
        problems = inspection.grant_problems(cur)
    assert [p for p in problems if "SET ROLE" in p] == [], problems
