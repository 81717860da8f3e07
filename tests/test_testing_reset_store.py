"""durable_schedule.testing.reset_store(): a project's tests that commit (TransactionTestCase,
pytest-django's transactional_db) start from an empty store. Django's flush between them
truncates only managed tables; the store's are SQL-owned (managed = False), so the Work and
schedules one test committed were still there in the next (seen in a fresh project: a second
TransactionTestCase found the first one's Work)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from demo.work import touch
from django.core.management import call_command
from django.db import connection

from durable_schedule import schedules, work
from durable_schedule.testing import STORE_TABLES, reset_store


def test_reset_store__lists_every_store_table_of_the_migrated_catalog(db):
    with connection.cursor() as cur:
        cur.execute("select c.relname from pg_class c join pg_namespace n"
                    " on n.oid = c.relnamespace where n.nspname = current_schema()"
                    " and c.relkind in ('r', 'p') and not c.relispartition"
                    " and c.relname like 'durable\\_%%'")
        catalog = {name for (name,) in cur.fetchall()}
    assert catalog - {"durable_schedule_store"} == set(STORE_TABLES)


@pytest.mark.django_db(transaction=True)
def test_reset_store__flush_leaves_committed_work_and_reset_store_empties_it(committed_clock):
    schedules.create("tenant-a", "nightly", schedules.Every(timedelta(hours=1)),
                     schedule_targets.report.target(payload={"report": "nightly"}))
    touch.enqueue(scope="tenant-a", command="c1", idempotency_key="k1", payload={})
    call_command("flush", interactive=False, verbosity=0)
    assert len(work.list("tenant-a")) == 1  # what Django's flush between tests leaves
    reset_store()
    assert work.list("tenant-a") == [] and schedules.list("tenant-a") == []
    with connection.cursor() as cur:
        cur.execute("select runtime_epoch, schema_version from durable_schedule_store")
        epoch, schema = cur.fetchone()
    assert epoch == 1 and schema is not None
    # The store works afterwards: a new scope, schedule and Work, ids restarted.
    again = touch.enqueue(scope="tenant-a", command="c1", idempotency_key="k1", payload={})
    assert again.created
