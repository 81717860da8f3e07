"""A schedule held by DS244 (its target queue was dropped from DURABLE_SCHEDULE['QUEUES']) is a
configuration state, not a failure of the pass.

Before: the bridge's DS244 was the schedule's own error, raised at the end of every pass that
claimed it, so ``process_schedules --loop`` exited after that pass (a supervised runner then
restarted every pass until the queue was listed again) and the one-shot command exited non-zero.
Now the pass counts it as ``held``, writes nothing but the dispatch row's next look (one lease
duration later, lease released), and the other schedules make their progress."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from django.core.management import call_command

from durable_schedule import schedules
from tests.schedules.conftest import (
    SCOPE,
    SECOND,
    T0,
    TEN,
    dispatch,
    leave_transaction_forms,
    occurrences,
    rows,
    run_pass,
)

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)  # DURABLE_SCHEDULE['LEASE_SECONDS'] of the test project


def routed(queue: str):
    return schedule_targets.report.target(payload={"report": "nightly"}, queue=queue)


def setup_held(settings) -> None:
    schedules.create(SCOPE, "held", schedules.Every(TEN), routed("emails"))
    schedules.create(SCOPE, "plain", schedules.Every(TEN),
                     schedule_targets.report.target(payload={"report": "nightly"}))
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}


@pytest.mark.parametrize("batch_size", [1, 100])
def test_pass__counts_a_held_schedule_and_the_others_progress(clock, settings, batch_size):
    setup_held(settings)
    counts = run_pass(clock, T0 + TEN, batch_size=batch_size)  # no error raised
    assert (counts.claimed, counts.held, counts.materialized) == (2, 1, 1)
    [held] = [o for o in counts.outcomes if o.action == "held"]
    assert (held.schedule_id, held.reason) == ("held", "unlisted_queue")
    assert (held.detail["code"], held.detail["queue"]) == ("DS244", "emails")
    assert occurrences("held") == [] and len(occurrences("plain")) == 1
    # The dispatch row is looked at again one lease duration later, its lease released.
    due_at, lease_owner, _revision = dispatch("held")
    assert (due_at, lease_owner) == (T0 + TEN + LEASE, None)
    assert rows("select state, suspension_reason from durable_schedule_definition"
                " where schedule_id = 'held'") == [("active", None)]
    # Not claimed again before then; held again after; runs once the queue is listed.
    assert run_pass(clock, T0 + TEN + LEASE - SECOND).claimed == 0
    again = run_pass(clock, T0 + TEN + LEASE)
    assert (again.claimed, again.held) == (1, 1)
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports", "emails"]}
    done = run_pass(clock, T0 + TEN + 2 * LEASE)
    assert (done.held, done.materialized) == (0, 1)
    assert [o[1] for o in occurrences("held")] == ["nominal"]


def test_one_shot_command__exits_zero_and_names_the_held_schedule(clock, settings, capsys):
    setup_held(settings)
    clock.set(T0 + TEN)
    try:
        call_command("process_schedules", "--skip-checks")  # a CommandError would raise
    finally:
        leave_transaction_forms()
    out, err = capsys.readouterr()
    assert "materialized=1" in out and "held=1" in out
    assert f"1 held: {SCOPE}/held" in err and "DS244" in err
