"""A schedule pass that raises after some of its schedules committed (one schedule's own error
is raised at the end of the pass): a ``process_schedules --loop`` runner that this error ends
still reports the 19 occurrences that were materialized and committed. Before, its counts were
dropped with the pass: no pass line, no summary, nothing in the heartbeat."""

from __future__ import annotations

import uuid

import pytest

from durable_schedule.errors import IdempotencyConflict
from durable_schedule.observability import logs
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from durable_schedule.runner import committed, loop
from tests.schedules.conftest import HOUR, SCOPE, T0, run_pass
from tests.schedules.test_batch import many, plant_work

pytestmark = pytest.mark.django_db


def test_schedule_loop__an_error_that_ends_it_keeps_what_the_pass_committed(clock, target,
                                                                           monkeypatch):
    many(target)
    derived = derive_link(OccurrenceIdentity(SCOPE, "m07", 1, "nominal", T0 + HOUR))
    plant_work(uuid.uuid4(), derived.command, derived.idempotency_key)
    monkeypatch.setattr(loop, "_open_listener", lambda name, channel: (None, False))
    seen: list[dict] = []
    with pytest.raises(IdempotencyConflict) as caught:
        loop.run_loop(name="schedule", run_once=lambda: run_pass(clock, T0 + HOUR).as_dict(),
                      channel="durable_schedule_due", seconds_until_due=lambda: None,
                      stop=loop.StopFlag(), after_pass=seen.append)
    stats = committed.loop_stats_of(caught.value)
    assert stats is not None and stats.passes == 1
    assert (stats.totals["claimed"], stats.totals["materialized"]) == (20, 19)
    assert [(c["claimed"], c["materialized"]) for c in seen] == [(20, 19)]
    assert logs.stop_summary("schedule", stats, failed=True) == (
        "schedule runner failed after 1 passes (0 busy): claimed=20 materialized=19")
