"""docs/protocol/schedules.md rule S8, docs/protocol/schedules.md "Manual processing API":
process_due processes at most max_schedules schedules, claims them in batches, returns zero counts
for an empty pass, observes cancellation before every new lease, and never rolls back a committed
fact of another schedule."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import transaction

from durable_schedule import schedules
from durable_schedule.errors import DurableError
from durable_schedule.processor import PassCounts, process_due
from durable_schedule.processor import processor as processor_module
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    SECOND,
    T0,
    create,
    definition,
    dispatch,
    leave_transaction_forms,
    occurrences,
    rows,
    run_pass,
    works,
)

DUE = T0 + HOUR


def due_schedules(target, n: int, scope: str = SCOPE) -> list[str]:
    names = [f"s{i:03d}" for i in range(n)]
    for name in names:
        create(name, schedules.Every(HOUR), target, scope=scope)
    return names


@pytest.mark.django_db
def test_empty_pass__returns_zero_counts(clock):
    counts = run_pass(clock)
    assert counts == PassCounts()
    assert counts.as_dict() == dict.fromkeys(processor_module.COUNT_FIELDS, 0)


@pytest.mark.django_db
def test_max_schedules__is_honoured_and_claimed_in_one_batch_statement(
        clock, target, monkeypatch):
    due_schedules(target, 5)
    asked = []
    real_claim = processor_module.claim

    def spy(owner, lease, max_rows, **kwargs):
        asked.append(max_rows)
        return real_claim(owner, lease, max_rows, **kwargs)

    monkeypatch.setattr(processor_module, "claim", spy)
    counts = run_pass(clock, DUE, max_schedules=3)
    assert (counts.claimed, counts.materialized, asked) == (3, 3, [3])
    counts = run_pass(clock, max_schedules=10)
    assert (counts.claimed, asked) == (2, [3, 10])
    assert len(works()) == 5


@pytest.mark.django_db
def test_default_pass__processes_one_schedule(clock, target):
    due_schedules(target, 2)
    clock.set(DUE)
    try:
        counts = process_due(lease_owner="x")
    finally:
        leave_transaction_forms()
    assert counts.claimed == 1


@pytest.mark.django_db
def test_cancellation__a_set_event_takes_no_lease(clock, target):
    due_schedules(target, 2)
    stop = threading.Event()
    stop.set()
    assert run_pass(clock, DUE, cancel=stop) == PassCounts()
    assert all(dispatch(name)[1] is None for name in ("s000", "s001"))


@pytest.mark.django_db
def test_cancellation__is_checked_before_each_new_claim(clock, target, monkeypatch):
    due_schedules(target, 4)
    monkeypatch.setattr(processor_module, "MAX_ROWS", 1)  # one lease per claim statement
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 2  # cancelled before the third claim

    counts = run_pass(clock, DUE, max_schedules=4, cancel=cancel)
    assert (counts.claimed, counts.materialized) == (2, 2)
    assert len(works()) == 2
    assert sum(dispatch(n)[1] is None and dispatch(n)[0] == DUE for n in
               ("s000", "s001", "s002", "s003")) == 2  # still due, never leased


@pytest.mark.django_db
@pytest.mark.parametrize("kwargs, code", [
    ({"max_schedules": 0}, "DS406"),
    ({"max_schedules": True}, "DS406"),
    ({"max_schedules": "5"}, "DS406"),
    ({"lease_owner": " "}, "DS404"),
    ({"lease_owner": "a\nb"}, "DS404"),
    ({"lease_duration": timedelta(minutes=10, microseconds=1)}, "DS404"),
    ({"lease_duration": timedelta(0)}, "DS404"),
    ({"cancel": 42}, "DS406"),
])
def test_bad_arguments__are_refused_before_any_claim(clock, target, kwargs, code):
    due_schedules(target, 1)
    before = dispatch("s000")
    with pytest.raises(DurableError) as err:
        run_pass(clock, DUE, **kwargs)
    assert err.value.code == code
    assert dispatch("s000") == before


def tamper_generation(schedule_id: str) -> None:
    """Plant an unevaluable active generation (generations are append-only: add one)."""
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by) select scope_id, schedule_id, 2, kind,"
         " '{\"interval_us\": \"soon\", \"anchor\": null}', accepted_at_utc, target,"
         " overlap_policy, misfire_policy, safety_window, evaluator_version, ''"
         " from durable_schedule_generation where schedule_id = %s returning id", (schedule_id,))
    rows("update durable_schedule_definition set active_generation = 2 where schedule_id = %s"
         " returning id", (schedule_id,))


@pytest.mark.django_db(transaction=True)
def test_unevaluable_schedule__is_quarantined_and_the_pass_goes_on(committed_clock, target):
    # docs/protocol/runner.md rules R1-R3 / docs/protocol/runner.md: a row that cannot be evaluated
    # is suspended with reason and evidence; the schedules before and after it in the same pass
    # still produce Work.
    create("a-first", schedules.Every(HOUR), target)
    committed_clock.set(T0 + SECOND)
    create("b-broken", schedules.Every(HOUR), target)
    committed_clock.set(T0 + 2 * SECOND)
    create("c-last", schedules.Every(HOUR), target)
    with transaction.atomic():
        tamper_generation("b-broken")
    committed_clock.set(DUE + 3 * SECOND)
    counts = process_due(max_schedules=10, lease_owner="w")
    assert (counts.materialized, counts.suspended) == (2, 1)
    assert [o[1] for o in occurrences("a-first")] == ["nominal"]
    assert [o[1] for o in occurrences("c-last")] == ["nominal"]
    assert occurrences("b-broken") == []
    broken = definition("b-broken")
    assert (broken["state"], broken["suspension_reason"]) == ("suspended", "unevaluable")
    evidence = broken["suspension_evidence"]
    assert evidence["code"] == "DS114" and evidence["context"]["phase"] == "evaluate"
    assert len(works()) == 2
    # The quarantined row is not due again: the next pass leaves it alone.
    committed_clock.set(DUE + HOUR + 4 * SECOND)
    again = process_due(max_schedules=10, lease_owner="w")
    assert again.suspended == 0 and occurrences("b-broken") == []


@pytest.mark.django_db
def test_foreign_pending_occurrence__is_quarantined_as_unevaluable_with_its_identity(clock, target):
    create("s", schedules.Every(HOUR), target)
    schedules.update(SCOPE, "s", expected_revision=1)
    rows("insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,"
         " first_nominal_utc, last_nominal_utc, state, created_at, updated_at)"
         " values (%s, 's', 1, 'coalesced', %s, %s, 'pending', now(), now()) returning id",
         (SCOPE, DUE, DUE))
    counts = run_pass(clock, DUE)
    assert counts.suspended == 1
    stored = definition("s")
    assert stored["suspension_reason"] == "unevaluable"
    context = stored["suspension_evidence"]["context"]
    assert (context["reason"], context["phase"], context["schedule_id"]) == (
        "foreign_pending_occurrence", "evaluate", "s")
    assert works() == []
