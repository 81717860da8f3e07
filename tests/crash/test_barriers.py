"""Every named crash barrier, reached by a real process that really dies there (exit 86 from
``os._exit``), then recovered by a fresh process after the dead one's lease expired (controlled,
committed clock), then checked against the crash-proof invariants of
:mod:`tests.crash.invariants` (docs/reliability.md):

* one occurrence per identity, each due instant covered exactly once, the cursor on the last
  instant covered -- right after the crash (before any recovery) and after it;
* exactly one Work per occurrence, with the identity derived from the occurrence;
* ``reconcile_before_retry`` Work never performs its effect twice (the reconciler's ``Applied``
  closes it), and every Work ends succeeded.

Each scenario has bystanders (other schedules, another scope) that the crash must not disturb.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from durable_schedule import barriers, schedules
from tests.conftest import T0
from tests.crash import harness, invariants
from tests.crash.harness import SCHEDULES, WORK
from tests.crash.invariants import rows
from tests.crash.passes import schedule_passes, settle, work_passes

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
SCOPE, OTHER = "crash-a", "crash-b"
#: Past the subprocesses' schedule lease and Work claim lease.
PAST_CLAIM_LEASE = timedelta(seconds=harness.LEASE_SECONDS + 1)
#: Past an admitted attempt's lease (the demo Work's retry policy: one minute).
PAST_ATTEMPT_LEASE = MINUTE + timedelta(seconds=1)

BRIDGE_BARRIERS = (barriers.SCHEDULE_BRIDGE_BEFORE_COMMIT, barriers.SCHEDULE_WORK_AFTER_ACCEPTANCE,
                   barriers.SCHEDULE_LINK_AFTER_COMMIT)
DECISION_BARRIERS = (barriers.SCHEDULE_DECISION_BEFORE_COMMIT,
                     barriers.SCHEDULE_DECISION_AFTER_COMMIT)
EXERCISED = set(BRIDGE_BARRIERS) | set(DECISION_BARRIERS) | set(harness.WORK_BARRIERS)


def test_suite__exercises_every_named_barrier():
    """A barrier added to durable_schedule.barriers must get a crash test here."""
    assert EXERCISED == barriers.ALL
    assert set(harness.BARRIER_COMMAND) == barriers.ALL


def create(schedule_id: str, spec, target, scope: str = SCOPE, **kwargs):
    return schedules.create(scope, schedule_id, spec, target, **kwargs)


def occurrences(schedule_id: str, scope: str = SCOPE) -> list[tuple]:
    """(kind, first, last, state, linked) in identity order."""
    return rows("select kind, first_nominal_utc, last_nominal_utc, state, work_id is not null"
                " from durable_schedule_occurrence where scope_id = %s and schedule_id = %s"
                " order by first_nominal_utc, kind", (scope, schedule_id))


def definition(schedule_id: str, scope: str = SCOPE) -> tuple:
    """(state, cursor, suspension_reason)."""
    return rows("select state, cursor_utc, suspension_reason from durable_schedule_definition"
                " where scope_id = %s and schedule_id = %s", (scope, schedule_id))[0]


def consistent_now(**kwargs) -> invariants.Report:
    """The invariants right after a crash: nothing half-written, before any recovery."""
    report = invariants.check(settled=False, **kwargs)
    report.assert_clean()
    return report


def settled(**kwargs) -> invariants.Report:
    report = invariants.check(settled=True, **kwargs)
    report.assert_clean()
    return report


# ------------------------------------------------------------------ schedule barriers
def scene_nominal(clock, invoice):
    """Due at T0+1h: Every, After and At schedules (the crash takes whichever is claimed
    first), plus a bystander in another scope."""
    with transaction.atomic():
        create("every", schedules.Every(HOUR), invoice.target(payload={"order": 1}))
        create("after", schedules.After(HOUR), invoice.target(payload={"order": 2}))
        create("at", schedules.At(T0 + HOUR), invoice.target(payload={"order": 3}))
        create("every", schedules.Every(HOUR), invoice.target(payload={"order": 4}), OTHER)
    clock.set(T0 + HOUR)


def expect_nominal():
    for name in ("every", "after", "at"):
        assert occurrences(name) == [("nominal", T0 + HOUR, T0 + HOUR, "materialized", True)]
    assert definition("after")[0] == definition("at")[0] == "completed"
    assert definition("every", OTHER)[1] == T0 + HOUR


def scene_recovery(clock, invoice):
    """Four instants missed (10, 20, 30, 40 min), late by less than the safety window: one
    recovery occurrence per schedule (misfire ``run_once``)."""
    with transaction.atomic():
        for n in range(2):
            create(f"r{n}", schedules.Every(10 * MINUTE), invoice.target(payload={"order": n}))
    clock.set(T0 + 45 * MINUTE)


def expect_recovery():
    for n in range(2):
        found = occurrences(f"r{n}")
        assert found[0] == ("recovery", T0 + 10 * MINUTE, T0 + 40 * MINUTE, "materialized", True)


def scene_coalesced(clock, invoice):
    """A pending coalesced occurrence whose slot has just become free: the pass that bridges it
    is the one that crashes."""
    with transaction.atomic():
        create("q", schedules.Every(10 * MINUTE), invoice.target(payload={"order": 7}))
    clock.set(T0 + 10 * MINUTE)
    schedule_passes()  # nominal 10 min: its Work occupies the slot (not executed yet)
    clock.set(T0 + 25 * MINUTE)
    schedule_passes()  # 20 min: coalesced, pending
    assert occurrences("q")[-1] == ("coalesced", T0 + 20 * MINUTE, T0 + 20 * MINUTE,
                                    "pending", False)
    work_passes()  # the occupying Work succeeds: the trigger makes the schedule due now


def expect_coalesced():
    found = occurrences("q")
    assert found[:2] == [
        ("nominal", T0 + 10 * MINUTE, T0 + 10 * MINUTE, "materialized", True),
        ("coalesced", T0 + 20 * MINUTE, T0 + 20 * MINUTE, "materialized", True)]


BRIDGE_SCENES = {
    "nominal": (scene_nominal, expect_nominal),
    "recovery": (scene_recovery, expect_recovery),
    "coalesced": (scene_coalesced, expect_coalesced),
}


@pytest.mark.parametrize("barrier", BRIDGE_BARRIERS)
@pytest.mark.parametrize("scene", sorted(BRIDGE_SCENES))
def test_crash__in_the_work_bridge_recovers_one_occurrence_and_one_work(
        committed_clock, invoice, scene, barrier):
    setup, expect = BRIDGE_SCENES[scene]
    setup(committed_clock, invoice)
    harness.crash(SCHEDULES, barrier)
    consistent_now()
    committed_clock.advance(PAST_CLAIM_LEASE)
    harness.recover(SCHEDULES)
    consistent_now()
    settle(committed_clock)
    settled()
    expect()


def scene_coalesce(clock, invoice):
    """The slot is occupied by the 10-minute Work: the 20-minute instant is coalesced."""
    with transaction.atomic():
        create("q", schedules.Every(10 * MINUTE), invoice.target(payload={"order": 7}))
        create("q", schedules.Every(HOUR), invoice.target(payload={"order": 8}), OTHER)
    clock.set(T0 + 10 * MINUTE)
    schedule_passes()
    clock.set(T0 + 20 * MINUTE)


def expect_coalesce():
    assert occurrences("q")[:2] == [
        ("nominal", T0 + 10 * MINUTE, T0 + 10 * MINUTE, "materialized", True),
        ("coalesced", T0 + 20 * MINUTE, T0 + 20 * MINUTE, "materialized", True)]


def scene_skipped(clock, invoice):
    """Misfire ``skip``: four missed instants become one skipped range, no Work."""
    with transaction.atomic():
        create("k", schedules.Every(10 * MINUTE), invoice.target(payload={"order": 9}),
               misfire="skip")
    clock.set(T0 + 45 * MINUTE)


def expect_skipped():
    assert occurrences("k")[0] == ("recovery", T0 + 10 * MINUTE, T0 + 40 * MINUTE, "skipped",
                                   False)


def scene_suspend(clock, invoice):
    """A clock jump past the safety window: suspend with evidence, cursor unmoved, no Work."""
    with transaction.atomic():
        create("j", schedules.Every(10 * MINUTE), invoice.target(payload={"order": 10}))
    clock.set(T0 + 2 * HOUR)


def expect_suspend():
    assert definition("j") == ("suspended", T0, "clock_jump")
    assert occurrences("j") == []
    assert rows("select count(*) from durable_schedule_history where scope_id = %s"
                " and schedule_id = 'j' and event = 'suspended'", (SCOPE,)) == [(1,)]


DECISION_SCENES = {
    "coalesce": (scene_coalesce, expect_coalesce, frozenset()),
    "skipped": (scene_skipped, expect_skipped, frozenset()),
    "suspend": (scene_suspend, expect_suspend, frozenset({f"{SCOPE}/j"})),
}


@pytest.mark.parametrize("barrier", DECISION_BARRIERS)
@pytest.mark.parametrize("scene", sorted(DECISION_SCENES))
def test_crash__at_a_decision_without_work_recovers_one_decision(
        committed_clock, invoice, scene, barrier):
    setup, expect, suspended = DECISION_SCENES[scene]
    setup(committed_clock, invoice)
    harness.crash(SCHEDULES, barrier)
    consistent_now(allow_suspended=suspended)
    committed_clock.advance(PAST_CLAIM_LEASE)
    harness.recover(SCHEDULES)
    consistent_now(allow_suspended=suspended)
    if scene != "suspend":
        settle(committed_clock)
    settled(allow_suspended=suspended)
    expect()


def test_crash__twice_at_the_same_bridge_barrier_still_recovers_once(committed_clock, invoice):
    """The first recovery dies at the same point again; the second one completes."""
    scene_nominal(committed_clock, invoice)
    for _ in range(2):
        harness.crash(SCHEDULES, barriers.SCHEDULE_WORK_AFTER_ACCEPTANCE)
        consistent_now()
        committed_clock.advance(PAST_CLAIM_LEASE)
    harness.recover(SCHEDULES)
    settle(committed_clock)
    settled()
    expect_nominal()


# ------------------------------------------------------------------ Work barriers
def permits_of(work_id) -> list[tuple]:
    """(permit_no, outcome, resolution_source) in permit order."""
    return rows("select permit_no, outcome, resolution_source from durable_work_permit"
                " where work_id = %s order by permit_no", (work_id,))


def effects_of(work_id) -> int:
    return rows("select count(*) from demo_effect where work_id = %s", (work_id,))[0][0]


#: (barrier, safety) -> the crashed Work's permits and effects after recovery.
WORK_EXPECTED = {
    # The effect happened, the outcome was never recorded: the reconciler finds the effect and
    # answers Applied; the Work succeeds without a second invocation.
    (barriers.WORK_EFFECT_BEFORE_OUTCOME, "invoice"): ([(1, "applied", "reconciler")], 1),
    # The permit committed, the executor never ran: NotApplied, then the next planned attempt.
    (barriers.WORK_PERMIT_AFTER_COMMIT, "invoice"): (
        [(1, "not_applied", "reconciler"), (2, "succeeded", "executor")], 1),
    # Idempotent Work may simply be repeated: the lost permit stays unresolved (ambiguous).
    (barriers.WORK_EFFECT_BEFORE_OUTCOME, "touch"): (
        [(1, None, None), (2, "succeeded", "executor")], 2),
    (barriers.WORK_PERMIT_AFTER_COMMIT, "touch"): (
        [(1, None, None), (2, "succeeded", "executor")], 1),
}


@pytest.mark.parametrize("safety", ["invoice", "touch"])
@pytest.mark.parametrize("barrier", harness.WORK_BARRIERS)
def test_crash__in_the_work_runtime_recovers_without_a_second_effect(
        committed_clock, invoice, touch, barrier, safety):
    chosen = invoice if safety == "invoice" else touch
    with transaction.atomic():
        for n in range(3):
            scope = SCOPE if n < 2 else OTHER
            create(f"w{n}", schedules.Every(HOUR), chosen.target(payload={"order": n}),
                   scope)
    committed_clock.set(T0 + HOUR)
    schedule_passes()
    harness.crash(WORK, barrier, *harness.PER_ITEM_WORK_ARGS)
    consistent_now()
    running = rows("select work_id from durable_work where state = 'running'")
    assert len(running) == 1, running  # the one attempt admitted before the process died
    crashed = running[0][0]
    committed_clock.advance(PAST_ATTEMPT_LEASE)
    harness.recover(WORK)
    settle(committed_clock)
    report = settled()
    expected_permits, expected_effects = WORK_EXPECTED[(barrier, safety)]
    assert permits_of(crashed) == expected_permits
    assert effects_of(crashed) == expected_effects
    assert report.works == {"succeeded": 3}
    others = rows("select count(*) from demo_effect where work_id <> %s", (crashed,))[0][0]
    assert others == 2  # the bystanders ran once each


def test_crash__schedule_and_work_barriers_in_one_chain(committed_clock, invoice):
    """The link commit dies, then the worker dies after the effect: still one occurrence, one
    Work, one effect."""
    scene_nominal(committed_clock, invoice)
    harness.crash(SCHEDULES, barriers.SCHEDULE_LINK_AFTER_COMMIT)
    committed_clock.advance(PAST_CLAIM_LEASE)
    harness.recover(SCHEDULES)
    harness.crash(WORK, barriers.WORK_EFFECT_BEFORE_OUTCOME)
    consistent_now()
    committed_clock.advance(PAST_ATTEMPT_LEASE)
    harness.recover(WORK)
    settle(committed_clock)
    report = settled()
    expect_nominal()
    assert report.works == {"succeeded": 4} and report.effects == 4
