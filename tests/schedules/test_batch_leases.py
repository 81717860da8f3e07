"""A lease that expires while a batch holds its rows (docs/reliability.md "Batches"): the batch
locked the claimed dispatch rows FOR UPDATE before it wrote anything, so another dispatcher's
claim (SKIP LOCKED) passes over exactly those rows and takes only rows the batch does not cover;
both commit, and every due instant gets exactly one occurrence and one Work."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import schedules
from durable_schedule.processor import batch as batch_module
from durable_schedule.processor import process_due
from durable_schedule.processor.dispatcher import claim
from tests.schedules.conftest import HOUR, SECOND, T0, create, occurrences, works

pytestmark = pytest.mark.django_db(transaction=True)


def test_lease_expiring_mid_batch__a_takeover_claims_exactly_the_rows_the_batch_does_not_hold(
        committed_clock, target, monkeypatch):
    names = [f"l{i}" for i in range(6)]
    for name in names:
        create(name, schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)

    locked, resume = threading.Event(), threading.Event()
    real = batch_module._Batch._lock

    def pausing(self, items, rows):  # rows: what the locking read returned
        real(self, items, rows)  # definitions, dispatch rows and slots of the batch are locked
        locked.set()
        resume.wait(30)

    monkeypatch.setattr(batch_module._Batch, "_lock", pausing)
    results: dict = {}

    def holder():
        try:
            results["pass"] = process_due(max_schedules=4, lease_owner="holder",
                                          lease_duration=timedelta(seconds=30))
        except BaseException as exc:  # reported by the main thread
            results["pass"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    assert locked.wait(30)
    # The holder's leases expire while its batch is open; another dispatcher claims.
    committed_clock.set(T0 + HOUR + 31 * SECOND)
    taken = claim("other", timedelta(seconds=30), 10)
    resume.set()
    thread.join(30)
    assert not isinstance(results["pass"], BaseException), results["pass"]
    held = {o.schedule_id for o in results["pass"].outcomes}
    assert len(held) == 4 and results["pass"].materialized == 4
    # The takeover got the two rows outside the batch, none of the four it held locked.
    assert {c.schedule_id for c in taken} == set(names) - held
    monkeypatch.undo()
    counts = process_due(max_schedules=10, lease_owner="other")
    assert counts.claimed == 0  # the takeover's two are leased to "other" until it processes
    from durable_schedule.processor.step import process_claim

    for c in taken:
        assert process_claim(c, "other").action == "nominal"
    assert len(works()) == 6
    assert all([o[1] for o in occurrences(n)] == ["nominal"] for n in names)
