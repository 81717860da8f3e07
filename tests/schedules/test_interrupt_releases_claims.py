"""A pass interrupted between two schedule decisions (Ctrl-C, docs/operations.md "Stopping"):
the decision that committed keeps its outcome and its dispatch row is not touched again; the
claim whose decision did not commit is released, due again at once, so the next pass takes it
without waiting for its lease. Before, it stayed leased until the lease expired."""

from __future__ import annotations

from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.processor import process_due
from durable_schedule.processor import processor as processor_module
from tests.runner.loophelpers import sql
from tests.schedules.conftest import HOUR, T0, create, works

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_interrupt_between_decisions_releases_only_the_claim_that_did_not_commit(
        committed_clock, target, monkeypatch):
    for name in ("i0", "i1"):
        create(name, schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    real = processor_module.process_claim
    calls = []

    def interrupting(one, owner, using=None):
        calls.append(one.schedule_id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(one, owner, using=using)

    monkeypatch.setattr(processor_module, "process_claim", interrupting)
    with pytest.raises(KeyboardInterrupt):
        process_due(max_schedules=2, lease_owner="interrupted",
                    lease_duration=timedelta(minutes=5), batch_size=1)
    first, second = calls
    assert len(works()) == 1  # the first decision committed
    leases = dict(sql("select schedule_id, lease_owner from durable_schedule_dispatch"))
    assert leases == {first: None, second: None}
    monkeypatch.setattr(processor_module, "process_claim", real)
    again = process_due(max_schedules=2, lease_owner="next",
                        lease_duration=timedelta(minutes=5))
    assert (again.claimed, again.materialized) == (1, 1)  # the released one, at once
    assert len(works()) == 2
