"""A held schedule (its target queue is not listed, DS244; docs/operations.md "Held schedules")
in a batch is left out of the batch and held alone after the commit; its batch mates commit in
the batch. Before, the Work template of its target raised DS244 in the middle of the batch's
writes: the batch rolled back and every schedule of it was processed again one transaction
each -- on every look at the held schedule, once per lease duration, for as long as the queue
stays unlisted, each time with a "batch ... rolled back" warning."""

from __future__ import annotations

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from durable_schedule.processor import processor as processor_module
from tests.schedules.conftest import SCOPE, T0, TEN, dispatch, occurrences, run_pass

pytestmark = pytest.mark.django_db


def test_a_held_schedule_in_a_batch__held_alone_the_batch_commits(clock, settings, caplog,
                                                                  monkeypatch):
    plain = schedule_targets.report.target(payload={"report": "nightly"})
    names = [f"p{i:02d}" for i in range(10)]
    for name in names[:5]:
        schedules.create(SCOPE, name, schedules.Every(TEN), plain)
    schedules.create(SCOPE, "held", schedules.Every(TEN),
                     schedule_targets.report.target(payload={"report": "nightly"},
                                                    queue="emails"))
    for name in names[5:]:
        schedules.create(SCOPE, name, schedules.Every(TEN), plain)
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}
    alone = []
    real = processor_module.process_claim
    monkeypatch.setattr(processor_module, "process_claim",
                        lambda one, *a, **k: alone.append(one.schedule_id) or real(one, *a, **k))
    counts = run_pass(clock, T0 + TEN)
    assert (counts.claimed, counts.held, counts.materialized) == (11, 1, 10)
    assert "rolled back" not in caplog.text
    assert alone == ["held"]
    assert occurrences("held") == []
    assert dispatch("held")[1] is None  # released, looked at again one lease later
    for name in names:
        assert [o[1] for o in occurrences(name)] == ["nominal"]
