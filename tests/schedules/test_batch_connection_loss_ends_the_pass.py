"""A database outage during a batched pass ends the pass after the batch's own retries
(docs/operations.md "Failover and database outages": 3 retries, 1.75 s in all, then DS405).

A batch that rolls back is processed again one schedule at a time, so that one schedule's lock
or statement timeout costs the others nothing (tests/runner/test_transient_timeouts.py). A lost
connection is no such schedule's own failure: every transaction of the pass fails the same way.
Before the fix the pass still ran every schedule of the batch alone, each with its own 3 retries
and reconnects (4 attempts and 1.75 s of backoff a schedule) before the pass raised and a
``--loop`` runner began to ride out the outage."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from durable_schedule import schedules
from durable_schedule.errors import RetriesExhausted
from durable_schedule.processor import processor as processor_module
from durable_schedule.runner import retry
from tests.schedules.conftest import HOUR, T0, create, dispatch, occurrences, run_pass, works

# The retries reconnect after a lost connection, which a test transaction would not survive.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outage(monkeypatch):
    """Every scoped transaction of the pass fails as a dropped connection does (no SQLSTATE);
    the claim, which commits first, goes through. Returns the attempts per form."""
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))
    attempts = {"batch": 0, "alone": 0}

    def lost(form):
        def fail(*args, **kwargs):
            attempts[form] += 1
            raise OperationalError("server closed the connection unexpectedly")
        return fail

    monkeypatch.setattr(processor_module, "process_batch", lost("batch"))
    monkeypatch.setattr(processor_module, "process_claim", lost("alone"))
    return attempts


def test_a_lost_connection_in_a_batch__ends_the_pass_after_the_batchs_retries(
        committed_clock, target, outage):
    names = [f"m{i:02d}" for i in range(8)]
    for name in names:
        create(name, schedules.Every(HOUR), target)
    with pytest.raises(RetriesExhausted) as err:
        run_pass(committed_clock, T0 + HOUR)
    assert err.value.code == "DS405"
    assert err.value.context["phase"] == "schedule.batch"
    # The batch's 4 attempts, then the pass ends: no schedule retried alone.
    assert outage == {"batch": 4, "alone": 0}
    assert works() == []
    for name in names:
        assert occurrences(name) == []
        assert dispatch(name)[1] is not None  # still leased; the lease lapses by itself


def test_a_lost_connection_alone__ends_the_pass_at_the_first_schedule(committed_clock, target,
                                                                     outage):
    for name in ("a", "b", "c"):
        create(name, schedules.Every(HOUR), target)
    with pytest.raises(RetriesExhausted) as err:
        run_pass(committed_clock, T0 + HOUR, batch_size=1)
    assert err.value.context["phase"] == "schedule.step"
    assert outage == {"batch": 0, "alone": 4}
