"""docs/schedules.md "Run now": a triggered run's Work occupies the slot like any other, so
under queue_one the next instant coalesces behind it. A batched pass whose locking read waited
for the trigger's transaction (both lock the definition) read the slot in the same statement,
under the snapshot taken before the wait: the manual occurrence was invisible, and the pass
materialized a second Work beside the triggered one."""

from __future__ import annotations

import threading

import pytest

from durable_schedule import schedules
from durable_schedule.processor import process_due
from durable_schedule.schedules import lifecycle as lifecycle_module
from tests.schedules.conftest import MINUTE, SCOPE, SECOND, T0, create, occurrences, rows, works
from tests.schedules.test_trigger_race import in_thread, waiting_on_a_lock

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("batch_size", [1, 100], ids=["single-step", "batched"])
def test_pass_waiting_for_a_trigger__sees_its_work_in_the_slot(committed_clock, target,
                                                                monkeypatch, batch_size):
    create("s", schedules.Every(10 * MINUTE), target)  # queue_one
    committed_clock.set(T0 + 10 * MINUTE + SECOND)
    inside, commit = threading.Event(), threading.Event()
    real_barrier = lifecycle_module.barrier

    def holding_barrier(name):
        if threading.current_thread().name == "trigger":
            inside.set()
            commit.wait(30)
        real_barrier(name)

    monkeypatch.setattr(lifecycle_module, "barrier", holding_barrier)
    results: dict = {}
    trigger = in_thread(lambda: schedules.trigger(SCOPE, "s", "run-now", actor="op"),
                        results, "trigger")
    trigger.name = "trigger"
    assert inside.wait(30)  # the trigger holds the definition lock, its Work not committed
    holder = in_thread(lambda: process_due(max_schedules=10, lease_owner="p",
                                           batch_size=batch_size), results, "pass")
    for _ in range(500):  # until the pass waits for the trigger's definition lock
        if waiting_on_a_lock():
            break
        holder.join(0.01)
    commit.set()
    trigger.join(30)
    holder.join(30)
    assert not isinstance(results.get("trigger"), BaseException), results
    counts = results["pass"]
    assert not isinstance(counts, BaseException), counts
    assert (counts.materialized, counts.coalesced) == (0, 1), counts
    assert len(works()) == 1
    assert sorted((o[1], o[4]) for o in occurrences("s")) == [("coalesced", "pending"),
                                                               ("manual", "materialized")]
    assert rows("select count(*) from durable_work where state = 'pending'") == [(1,)]
