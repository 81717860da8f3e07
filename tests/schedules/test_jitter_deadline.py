"""A jitter not shorter than the target's deadline_after (DS155).

An instant's Work is due at ``instant + offset`` (``0 <= offset < jitter``) and its deadline
is ``materialization + deadline_after``; a pass at the instant itself gives a jitter of
deadline_after or more Work due at or after its own deadline -- Work that could only expire.
``enqueue`` refuses such Work (DS218), the schedule passes did not: ``create`` / ``update`` /
``declare`` accepted the shape and every jittered instant's Work expired unrun. Now the
commands refuse it (DS155, nothing written) and a pass quarantines a stored generation of that
shape (reason ``unevaluable``, DS155 as evidence) instead of creating such Work."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from django.db import transaction

from durable_schedule import schedules
from durable_schedule.errors import InvalidJitter, JitterPastDeadline
from durable_schedule.processor import process_due
from durable_schedule.schedules import declared
from tests.schedules.conftest import (
    HOUR,
    MINUTE,
    SCOPE,
    SECOND,
    T0,
    definition,
    occurrences,
    rows,
    run_pass,
    works,
)
from tests.schedules.test_bad_input import snapshot

TEN = 10 * MINUTE


def deadline_target(after: timedelta = TEN):
    return schedule_targets.report.target(payload={"report": "nightly"}, deadline_after=after)


def create(schedule_id, spec, target, **kwargs):
    return schedules.create(SCOPE, schedule_id, spec, target, **kwargs)


@pytest.mark.django_db
@pytest.mark.parametrize("spec,jitter", [
    (schedules.At(T0 + HOUR), TEN),
    (schedules.At(T0 + HOUR), HOUR),
    (schedules.After(HOUR), 2 * TEN),
    (schedules.Every(HOUR), TEN),
    (schedules.Cron("0 * * * *"), 30 * MINUTE),
])
def test_create__refuses_a_jitter_not_shorter_than_deadline_after_and_changes_nothing(
        clock, spec, jitter):
    before = snapshot()
    with pytest.raises(JitterPastDeadline) as caught:
        create("late", spec, deadline_target(), jitter=jitter)
    assert caught.value.code == "DS155" and isinstance(caught.value, InvalidJitter)
    assert caught.value.context["deadline_after"] == str(TEN)
    assert snapshot() == before


@pytest.mark.django_db
def test_create__accepts_a_jitter_just_shorter_than_deadline_after(clock):
    info = create("fits", schedules.At(T0 + HOUR), deadline_target(),
                  jitter=TEN - timedelta(microseconds=1))
    assert info.jitter == TEN - timedelta(microseconds=1)


@pytest.mark.django_db
def test_update__refuses_a_longer_jitter_and_a_shorter_deadline_and_changes_nothing(clock):
    info = create("s", schedules.Every(HOUR), deadline_target(), jitter=5 * MINUTE)
    before = snapshot()
    with pytest.raises(JitterPastDeadline):
        schedules.update(SCOPE, "s", expected_revision=info.revision, jitter=TEN)
    # The jitter kept, the target's deadline made shorter than it.
    with pytest.raises(JitterPastDeadline):
        schedules.update(SCOPE, "s", expected_revision=info.revision,
                         target=deadline_target(5 * MINUTE))
    assert snapshot() == before
    # A target without a deadline bounds nothing.
    schedules.update(SCOPE, "s", expected_revision=info.revision,
                     target=schedule_targets.report.target(payload={"report": "nightly"}),
                     jitter=30 * MINUTE)


def test_declare__refuses_it_at_import_time():
    with pytest.raises(JitterPastDeadline):
        declared.declare("declared-late", schedules.Every(HOUR), target=deadline_target(),
                         scope=SCOPE, jitter=TEN)
    assert all(d.schedule_id != "declared-late" for d in declared.declarations())


def plant_jitter(schedule_id: str, jitter: timedelta) -> None:
    """A stored generation with ``jitter`` (stored before the commands refused it, or
    tampered): generations are append-only, so generation 2 copies 1 with the jitter."""
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by, jitter) select scope_id, schedule_id, 2, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, '', %s from durable_schedule_generation where schedule_id = %s"
         " returning id", (jitter, schedule_id))
    rows("update durable_schedule_definition set active_generation = 2 where schedule_id = %s"
         " returning id", (schedule_id,))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("batch_size", [1, 100])
def test_pass__quarantines_a_stored_jitter_past_the_deadline_and_goes_on(committed_clock,
                                                                         batch_size):
    create("a-first", schedules.Every(HOUR), deadline_target())
    committed_clock.set(T0 + SECOND)
    create("b-late", schedules.Every(HOUR), deadline_target(), jitter=5 * MINUTE)
    committed_clock.set(T0 + 2 * SECOND)
    create("c-last", schedules.Every(HOUR), deadline_target())
    with transaction.atomic():
        plant_jitter("b-late", 50 * MINUTE)
    committed_clock.set(T0 + HOUR + 3 * SECOND)
    counts = process_due(max_schedules=10, lease_owner="w", batch_size=batch_size)
    assert (counts.materialized, counts.suspended) == (2, 1)
    assert occurrences("b-late") == []
    stored = definition("b-late")
    assert (stored["state"], stored["suspension_reason"]) == ("suspended", "unevaluable")
    evidence = stored["suspension_evidence"]
    assert evidence["code"] == "DS155" and evidence["generation"] == 2
    assert evidence["context"]["phase"] == "evaluate"
    assert evidence["context"]["deadline_after"] == str(TEN)
    # No Work due at or after its deadline was created, for any schedule.
    assert len(works()) == 2
    assert rows("select count(*) from durable_work where due_at >= execution_deadline"
                ) == [(0,)]


@pytest.mark.django_db
def test_pass__a_jitter_shorter_than_the_deadline_runs_before_it(clock):
    create("ok", schedules.Every(HOUR), deadline_target(), jitter=TEN - SECOND)
    counts = run_pass(clock, T0 + HOUR)
    assert counts.materialized == 1
    due, deadline = rows("select due_at, execution_deadline from durable_work")[0]
    assert due < deadline
