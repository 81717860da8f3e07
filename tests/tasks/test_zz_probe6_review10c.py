from __future__ import annotations

import pytest
from demo import tasks as demo
from demo.models import Effect
from django.db import connection, transaction

from durable_schedule import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def state():
    with connection.cursor() as c:
        c.execute("select current_user, session_user, current_setting('search_path'),"
                  " coalesce(current_setting('durable_schedule.scope_id', true), '-')")
        return c.fetchone()


def test_probe_in_txn(committed_clock):
    with transaction.atomic():
        print("\nBEFORE", state())
        r = demo.add.enqueue(1, 1)
        print("AFTER ENQ", state())
        with tasks.scope("other-tenant"):
            o = demo.add.enqueue(1, 1)
        print("AFTER ENQ2", state())
        print("GET", demo.add.get_result(r.id).status)
        print("AFTER GET", state())
        Effect.objects.create(work_id=r.id, attempt=1, key="x")
        print("EFFECTS", Effect.objects.count())
        with tasks.scope("other-tenant"):
            print("GET O", demo.add.get_result(o.id).status)
        print("AFTER GET O", state())
