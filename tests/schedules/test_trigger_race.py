"""docs/protocol/schedules.md rule S4 under concurrency: a Work that reaches a terminal state while
a pass holds the schedule's lease (and has already read the slot) must not be lost. The pass locks
the slot's Work FOR SHARE, so the Work's terminal UPDATE waits for the pass to commit; its trigger
then sees the unleased dispatch row and the pending coalesced occurrence, and requeues at once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from durable_schedule import schedules
from durable_schedule.processor import batch as batch_module
from durable_schedule.processor import process_due
from durable_schedule.processor import step as step_module
from tests.schedules.conftest import MINUTE, T0, create, dispatch, rows, set_work_state, works

pytestmark = pytest.mark.django_db(transaction=True)


def in_thread(fn, results: dict, key: str) -> threading.Thread:
    def body():
        try:
            results[key] = fn()
        except BaseException as exc:  # reported by the main thread
            results[key] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def waiting_on_a_lock() -> int:
    return rows("select count(*) from pg_stat_activity where datname = current_database()"
                " and wait_event_type = 'Lock'")[0][0]


@pytest.mark.parametrize("path", ["alone", "batch"])
def test_race__work_finishing_while_a_pass_holds_the_slot_still_requeues(
        committed_clock, target, monkeypatch, path):
    at = lambda minutes: T0 + minutes * MINUTE  # noqa: E731
    create("s", schedules.Every(10 * MINUTE), target)
    committed_clock.set(at(10))
    process_due(lease_owner="setup")
    committed_clock.set(at(20))
    process_due(lease_owner="setup")  # a pending coalesced occurrence behind the first Work
    [(first_work, *_)] = works()
    committed_clock.set(at(25))
    rows("update durable_schedule_dispatch set due_at = '-infinity' returning 1")

    slot_read, resume = threading.Event(), threading.Event()
    # The single step reads one slot; the batched pass locks the rows of its batch (slots
    # included) in one read.
    owner, name = (step_module, "_lock_slot") if path == "alone" else \
        (batch_module._Batch, "_lock")
    real_lock_slot = getattr(owner, name)

    def pausing_lock_slot(*args):
        occupant = real_lock_slot(*args)
        slot_read.set()
        resume.wait(30)
        return occupant

    monkeypatch.setattr(owner, name, pausing_lock_slot)
    results: dict = {}
    size = 1 if path == "alone" else 100
    holder = in_thread(lambda: process_due(lease_owner="holder", batch_size=size), results,
                       "pass")
    assert slot_read.wait(30)
    finisher = in_thread(lambda: set_work_state(first_work, "succeeded"), results, "finish")
    for _ in range(500):  # until the Work's UPDATE waits for the pass (or finished anyway)
        if waiting_on_a_lock() or not finisher.is_alive():
            break
        finisher.join(0.01)
    resume.set()
    holder.join(30)
    finisher.join(30)
    assert not isinstance(results["pass"], BaseException), results["pass"]
    assert results["finish"] == 1
    assert (results["pass"].noop, results["pass"].materialized) == (1, 0)
    # The pass saw the Work nonterminal and left the coalesced occurrence pending; the trigger
    # ran after the pass committed and made the row due now instead of at 12:30.
    assert dispatch("s")[0:2] == (at(25), None)
    monkeypatch.undo()
    assert process_due(lease_owner="next").materialized == 1
