"""Declared schedules and the target's routing (docs/schedules.md "Schedules declared in code",
docs/work.md "Queues and priorities"): a changed queue or priority is one new generation on
sync, an unchanged routing (default routing written out included) none, and two syncs at once
make one generation between them."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections

from durable_schedule import schedules, work
from durable_schedule.schedules import declared

pytestmark = pytest.mark.django_db(transaction=True)
ANCHOR = datetime(2030, 1, 1, tzinfo=UTC)


def decl(**routing) -> declared.Declaration:
    work.autodiscover()
    target = work.lookup("demo.touch", "v1").target(payload={"kind": "nightly"}, **routing)
    return declared.Declaration(scope="tenant-a", schedule_id="nightly",
                                spec=schedules.Every(timedelta(hours=24), anchor=ANCHOR),
                                target=target)


def stored() -> tuple:
    info = schedules.get("tenant-a", "nightly")
    return info.generation, info.target.queue, info.target.priority


def test_sync__a_routing_change_is_one_new_generation_and_then_unchanged(committed_clock):
    declared.sync(declared=[decl()])
    # The default routing written out is the same declaration: no generation.
    assert declared.sync(declared=[decl(queue="default", priority=0)]).unchanged
    assert stored() == (1, "default", 0)
    report = declared.sync(declared=[decl(queue="emails", priority=10)])
    assert report.updated == [("tenant-a", "nightly", ["target"])]
    assert stored() == (2, "emails", 10)
    assert declared.sync(declared=[decl(queue="emails", priority=10)]).unchanged
    # Priority alone is a change too, and so is going back to the default routing.
    assert declared.sync(declared=[decl(queue="emails", priority=11)]).updated
    assert declared.sync(declared=[decl()]).updated
    assert stored() == (4, "default", 0)


def test_concurrent_syncs__of_a_routing_change_make_one_generation(committed_clock):
    declared.sync(declared=[decl()])
    changed = decl(queue="emails", priority=10)
    start = threading.Barrier(2)
    reports: list = []
    errors: list = []

    def deploy() -> None:
        try:
            start.wait(timeout=30)
            reports.append(declared.sync(declared=[changed]))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    hosts = [threading.Thread(target=deploy) for _ in range(2)]
    for host in hosts:
        host.start()
    for host in hosts:
        host.join(timeout=120)
    assert errors == []
    # Serialized by the sync lock: one updates, the other sees its commit and has nothing to do.
    assert sorted(len(r.updated) for r in reports) == [0, 1]
    assert sorted(len(r.unchanged) for r in reports) == [0, 1]
    assert stored() == (2, "emails", 10)
