"""Deployment checks for ``manage.py check --deploy`` (docs/operations.md "Deployment checks").

Ids are stable: ``durable_schedule.W010``-``W013``. Warnings, not errors: each names a setup
that works but is unsafe or slow in production, and the project decides.

* W010: the Django database user is a superuser or has BYPASSRLS. Protocol statements switch to
  the NOLOGIN roles and stay bound by row-level security, but everything the owner runs itself
  (the admin's reads, your own ORM queries on our tables, operator maintenance) is not: forced
  RLS only binds an owner that is neither.
* W011: the connection looks like a transaction-mode pooler (``DISABLE_SERVER_SIDE_CURSORS``,
  which Django requires there, or PgBouncer's port 6432) while ``PREPARE_STATEMENTS = True``
  forces preparing on (the default turns it off there): only PgBouncer >= 1.21 with
  ``max_prepared_statements`` keeps prepared statements.
* W012: next month's history partition is missing (run ``manage.py durable_partitions``;
  ``--loop`` schedule runners create it daily).
* W013: the store cannot be read, so the checks above could not run.
* W014: the clock seam does not read the database clock (a test's ``ControlledClock`` left in
  place, or any other replacement): protocol time stands still, nothing falls due, no lease
  expires (docs/security.md "The clock seam").
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.db import DatabaseError

from durable_schedule import conf
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection

PGBOUNCER_PORT = conf.PGBOUNCER_PORT


@checks.register(deploy=True)
def check_deployment(app_configs=None, **kwargs):
    try:
        conf.database_alias()
        conf.prepare_statements()
    except conf.InvalidSettings:
        return []  # the settings check (E005) names the setting; there is no store to read
    out: list[checks.CheckMessage] = []
    out.extend(_pooler_settings())
    if not settings.USE_TZ:
        return out  # the store is not read without USE_TZ: durable_schedule.E450 says so
    try:
        with connection().cursor() as cur:
            out.extend(_owner_flags(cur))
            out.extend(_next_month_partition(cur))
            out.extend(_clock_seam(cur))
    except DatabaseError as exc:
        out.append(checks.Warning("cannot read the durable_schedule store on DATABASES"
                                  f"[{conf.database_alias()!r}]: {exc}",
                                  id="durable_schedule.W013"))
    return out


def _owner_flags(cur) -> list[checks.CheckMessage]:
    cur.execute("select current_user, rolsuper, rolbypassrls from pg_roles "
                "where rolname = current_user")
    user, superuser, bypass = cur.fetchone()
    if not (superuser or bypass):
        return []
    what = "a superuser" if superuser else "BYPASSRLS"
    return [checks.Warning(
        f"the durable_schedule database user {user} is {what}: row-level security does not "
        "bind what it runs itself (admin reads, ORM queries on the store, maintenance)",
        hint="Run the application as a plain role that owns the store (NOSUPERUSER "
             "NOBYPASSRLS); docs/security.md \"Roles\".",
        id="durable_schedule.W010")]


def _pooler_settings() -> list[checks.CheckMessage]:
    # With the default (None) a declared pooler already turns preparing off: this warns only
    # when PREPARE_STATEMENTS = True forces it on there.
    if not conf.declares_transaction_pooler() or not conf.prepare_statements():
        return []
    return [checks.Warning(
        "the database connection looks like a transaction-mode pooler "
        "(DISABLE_SERVER_SIDE_CURSORS or port 6432) and DURABLE_SCHEDULE['PREPARE_STATEMENTS'] "
        "is on",
        hint="Keep it on only with PgBouncer >= 1.21 and max_prepared_statements set; otherwise "
             "set DURABLE_SCHEDULE = {'PREPARE_STATEMENTS': False} (docs/operations.md "
             "\"Prepared statements and connection poolers\").",
        id="durable_schedule.W011")]


def _next_month_partition(cur) -> list[checks.CheckMessage]:
    cur.execute(query("inspection_queries.sql", "store_exists"))
    if not cur.fetchone()[0]:
        return []  # E001 reports it
    cur.execute(query("operations_queries.sql", "partitions"))
    present = {r[0] for r in cur.fetchall()}
    cur.execute(query("operations_queries.sql", "expected_partitions"))
    missing = [r[0] for r in cur.fetchall() if r[0] not in present]
    return [checks.Warning(
        f"history partition {name} is missing",
        hint="Run `manage.py durable_partitions` (a --loop schedule runner does it daily).",
        id="durable_schedule.W012") for name in missing]


#: The calls the production body of the clock seam makes (store/sql/0002_security.sql): a body
#: without both reads another clock than the database's.
_DATABASE_CLOCKS = ("transaction_timestamp()", "clock_timestamp()")


def _clock_seam(cur) -> list[checks.CheckMessage]:
    cur.execute(query("inspection_queries.sql", "clock_source"))
    row = cur.fetchone()
    if row is None or row[0] is None:
        return []  # not migrated (E001) or the function missing (E003)
    body = " ".join(row[0].split()).lower()
    if all(call in body for call in _DATABASE_CLOCKS):
        return []
    return [checks.Warning(
        "the clock seam durable_schedule_clock does not read the database clock (a test's "
        "ControlledClock left in place?): protocol time stands still, nothing falls due and no "
        "lease expires",
        hint="As the migration owner: python -c 'import django; django.setup(); "
             "from durable_schedule.testing import ControlledClock; ControlledClock().restore()'"
             " (DJANGO_SETTINGS_MODULE set), or re-create the body of store/sql/0002_security.sql"
             "; docs/security.md \"The clock seam\".",
        id="durable_schedule.W014")]
