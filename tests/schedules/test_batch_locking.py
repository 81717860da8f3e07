"""The batch's one locking read ("lock batch", docs/architecture.md "One batched pass"): while a
batch holds its locks, the slot Work of a claim still ours on an active definition is held FOR
SHARE (as the single step's "lock slot" holds it), and the slot Work of a claim the batch will
not decide on (superseded by an API change) is not locked at all; the claims decide exactly as
they would alone."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import connection

from durable_schedule import schedules
from durable_schedule.processor import batch as batch_module
from durable_schedule.processor.batch import process_batch
from tests.conftest import database_url
from tests.schedules.conftest import HOUR, OWNER, SCOPE, T0, create, take_claims, works

pytestmark = pytest.mark.django_db(transaction=True)


def latest_work(schedule_id: str):
    with connection.cursor() as cur:
        cur.execute("select work_id from durable_schedule_occurrence where scope_id = %s and"
                    " schedule_id = %s and work_id is not null order by id desc limit 1",
                    (SCOPE, schedule_id))
        return cur.fetchone()[0]


def lockable(conn: psycopg.Connection, work_id) -> bool:
    """Can another transaction lock this Work row FOR UPDATE right now (no waiting)?"""
    try:
        with conn.transaction():
            conn.execute("select 1 from durable_work where scope_id = %s and work_id = %s"
                         " for update nowait", (SCOPE, work_id))
        return True
    except psycopg.errors.LockNotAvailable:
        return False


def test_lock_batch__locks_the_slot_work_of_live_claims_only(committed_clock, target,
                                                             monkeypatch):
    for name in ("live", "stale"):
        create(name, schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    claims = take_claims(max_rows=10)
    assert len(process_batch(claims, OWNER).outcomes) == 2  # both bridged: two slot Works
    slot = {name: latest_work(name) for name in ("live", "stale")}

    committed_clock.set(T0 + 2 * HOUR)
    claims = take_claims(max_rows=10)
    assert sorted(c.schedule_id for c in claims) == ["live", "stale"]
    schedules.pause(SCOPE, "stale")  # re-arms its dispatch row: that claim is superseded

    locked, resume = threading.Event(), threading.Event()
    real = batch_module._Batch._lock

    def pausing(self, items, rows):  # rows: what the locking read returned
        real(self, items, rows)
        locked.set()
        resume.wait(30)

    monkeypatch.setattr(batch_module._Batch, "_lock", pausing)
    results: dict = {}

    def holder():
        try:
            results["batch"] = process_batch(claims, OWNER)
        except BaseException as exc:  # reported by the main thread
            results["batch"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    try:
        assert locked.wait(30)
        with psycopg.connect(database_url(), autocommit=True) as other:
            assert not lockable(other, slot["live"])  # FOR SHARE by the batch
            assert lockable(other, slot["stale"])  # not the batch's to decide on
    finally:
        resume.set()
        thread.join(30)
    result = results["batch"]
    assert not isinstance(result, BaseException), result
    actions = {c.schedule_id: o.action for c, o in result.outcomes.items()}
    # live: its Work still runs (queue_one): a coalesced occurrence waits behind it.
    assert actions == {"live": "coalesce", "stale": "superseded"}
    assert len(works()) == 2
