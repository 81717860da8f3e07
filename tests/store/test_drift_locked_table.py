"""The security drift check (``manage.py check`` E003, ``durable_status``, the metrics) must not
wait behind a lock: a runner starts with that check, and a migration or a ``LOCK TABLE`` holding
a scoped table in ACCESS EXCLUSIVE mode made it hang there -- reading a policy's text
(``pg_policies``, ``pg_get_expr``) opens its table -- before the runner had installed its
SIGTERM handler (docs/security.md "Drift")."""

from __future__ import annotations

import logging

import psycopg
import pytest
from django.db import connection

from durable_schedule.store.inspection import grant_problems
from tests.conftest import database_url

pytestmark = pytest.mark.django_db


def test_a_table_locked_by_another_session_is_left_out_not_waited_for(caplog):
    holder = psycopg.connect(database_url())
    try:
        holder.execute("lock table durable_schedule_definition in access exclusive mode")
        with connection.cursor() as cur, caplog.at_level(logging.WARNING):
            # Bounded: without the fix the policy query waits for the lock until this fires.
            cur.execute("set statement_timeout = '5s'")
            try:
                problems = grant_problems(cur)
            finally:
                cur.execute("reset statement_timeout")
        assert problems == []
        assert "durable_schedule_definition" in caplog.text
        assert "locked by another session" in caplog.text
    finally:
        holder.rollback()
        holder.close()


def test_with_the_lock_released_the_table_is_compared_again():
    # (in the test's transaction: rolled back with it)
    with connection.cursor() as cur:
        cur.execute("alter policy durable_scope_isolation on durable_schedule_definition"
                    " using (true)")
        problems = grant_problems(cur)
    assert ("policy durable_scope_isolation on durable_schedule_definition is not the"
            " contract's") in problems
