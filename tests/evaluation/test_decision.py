"""The per-pass decision (docs/protocol/schedules.md "Occurrence materialization", "Clock and
evaluator fences"; docs/protocol/schedules.md rules S1, S3 and S4). Each test names the rule it
pins."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule.errors import (
    InvalidArgument,
    InvalidSchedulePolicy,
    InvalidScheduleSpec,
    NaiveDatetime,
    NonPositiveDuration,
    UnevaluableGeneration,
)
from durable_schedule.evaluation.decision import (
    MISFIRE_POLICIES,
    OVERLAP_POLICIES,
    Decision,
    SlotState,
    decide,
)
from durable_schedule.evaluation.timeline import After, At, Every

T0 = datetime(2030, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
US = timedelta(microseconds=1)
FREE = SlotState(occupied=False)
BUSY = SlotState(occupied=True)


def t(**delta: float) -> datetime:
    return T0 + timedelta(**delta)


def run(spec, cursor, cutoff, *, window=timedelta(days=1), misfire="run_once", slot=FREE,
        accepted_at=T0, overlap="queue_one") -> Decision:
    return decide(spec, accepted_at, cursor, cutoff, safety_window=window, misfire=misfire,
                  overlap=overlap, slot=slot)


def test_policies__defaults_come_first():
    assert MISFIRE_POLICIES[0] == "run_once"
    assert OVERLAP_POLICIES == ("queue_one", "skip", "buffer_all", "allow_all")  # docs/schedules.md


# ---------------------------------------------------------------- rule 1: noop
@pytest.mark.parametrize("cutoff", [t(hours=5), t(hours=4)])
def test_noop__cutoff_at_or_behind_cursor_changes_nothing(cutoff):
    d = run(Every(H), t(hours=5), cutoff)
    assert (d.action, d.first, d.last, d.count) == ("noop", None, None, 0)
    assert d.new_cursor == t(hours=5)
    assert d.next_due == t(hours=6)
    assert d.evidence is None and d.suspend_reason is None


def test_noop__no_instant_in_window_keeps_cursor_and_reports_next_due():
    d = run(Every(H), t(hours=5), t(hours=6) - US)
    assert d.action == "noop"
    assert d.new_cursor == t(hours=5)
    assert d.next_due == t(hours=6)


def test_noop__spent_at_schedule_has_no_next_due():
    d = run(At(t(hours=1)), t(hours=1), t(hours=9))
    assert d.action == "noop" and d.next_due is None


# ---------------------------------------------------------------- rule 3: in time
def test_nominal__one_instant_moves_cursor_to_it():
    d = run(Every(H), T0, t(hours=1, minutes=30))
    assert (d.action, d.first, d.last, d.count) == ("nominal", t(hours=1), t(hours=1), 1)
    assert d.new_cursor == t(hours=1)
    assert d.next_due == t(hours=2)
    assert d.produces_work and d.occurrence_kind == "nominal"


def test_nominal__single_shot_after_has_no_next_due():
    d = run(After(timedelta(minutes=5)), T0, t(minutes=5))
    assert d.action == "nominal" and d.new_cursor == t(minutes=5) and d.next_due is None


def test_recovery__run_once_turns_missed_instants_into_one_range():
    d = run(Every(H), T0, t(hours=4, minutes=10), misfire="run_once")
    assert (d.action, d.first, d.last, d.count) == ("recovery", t(hours=1), t(hours=4), 4)
    assert d.new_cursor == t(hours=4)
    assert d.next_due == t(hours=5)
    assert d.produces_work and d.occurrence_kind == "recovery"


def test_skipped__skip_records_missed_instants_as_one_skipped_range():
    d = run(Every(H), T0, t(hours=4, minutes=10), misfire="skip")
    assert (d.action, d.first, d.last, d.count) == ("skipped", t(hours=1), t(hours=4), 4)
    assert d.new_cursor == t(hours=4)
    assert d.next_due == t(hours=5)
    assert not d.produces_work and d.occurrence_kind == "recovery"


def test_skip__a_single_instant_is_still_nominal():
    assert run(Every(H), T0, t(hours=1), misfire="skip").action == "nominal"


def test_recovery__million_missed_instants_decided_as_one_range():
    d = run(Every(US), T0, t(seconds=1), misfire="run_once")
    assert (d.action, d.count, d.last, d.next_due) == (
        "recovery", 1_000_000, t(seconds=1), t(seconds=1, microseconds=1)
    )


# ---------------------------------------------------------------- rule 2: clock jump
def test_suspend__earliest_instant_later_than_window_suspends_without_moving_cursor():
    d = run(Every(H), T0, t(hours=3, minutes=1), window=timedelta(hours=2))
    assert d.action == "suspend"
    assert d.suspend_reason == "clock_jump"
    assert d.new_cursor == T0
    assert d.next_due == t(hours=1)
    assert not d.produces_work and d.occurrence_kind is None
    assert (d.first, d.last, d.count) == (t(hours=1), t(hours=3), 3)
    ev = d.evidence
    assert json.loads(json.dumps(ev)) == ev
    assert ev["cursor"] == "2030-01-01T00:00:00.000000+00:00"
    assert ev["cutoff"] == "2030-01-01T03:01:00.000000+00:00"
    assert ev["earliest"] == "2030-01-01T01:00:00.000000+00:00"
    assert ev["lateness_us"] == (2 * 60 + 1) * 60_000_000
    assert ev["window_us"] == 2 * 3_600_000_000


def test_suspend__lateness_equal_to_window_is_still_in_time():
    d = run(Every(H), T0, t(hours=3), window=timedelta(hours=2))
    assert d.action == "recovery"
    assert run(Every(H), T0, t(hours=3) + US, window=timedelta(hours=2)).action == "suspend"


def test_suspend__judged_on_earliest_instant_not_latest():
    # The latest instant is one minute old, the earliest is ten hours old.
    d = run(Every(H), T0, t(hours=10, minutes=1), window=timedelta(hours=1))
    assert d.action == "suspend"


def test_suspend__wins_over_an_occupied_slot():
    d = run(Every(H), T0, t(hours=9), window=H, slot=BUSY)
    assert d.action == "suspend" and d.new_cursor == T0


# ---------------------------------------------------------------- rule 4: queue_one
def test_coalesce__occupied_slot_turns_nominal_into_coalesce():
    d = run(Every(H), t(hours=1), t(hours=2), slot=BUSY)
    assert (d.action, d.first, d.last, d.count) == ("coalesce", t(hours=2), t(hours=2), 1)
    assert d.new_cursor == t(hours=2)
    assert d.next_due == t(hours=3)
    assert not d.produces_work and d.occurrence_kind == "coalesced"


def test_coalesce__occupied_slot_turns_recovery_into_one_coalesced_range():
    d = run(Every(H), T0, t(hours=3), slot=BUSY)
    assert (d.action, d.first, d.last, d.count) == ("coalesce", t(hours=1), t(hours=3), 3)


def test_coalesce__skip_wins_over_occupied_slot_for_a_missed_range():
    assert run(Every(H), T0, t(hours=3), misfire="skip", slot=BUSY).action == "skipped"


def test_coalesce__skip_with_one_instant_and_occupied_slot_coalesces():
    assert run(Every(H), T0, t(hours=1), misfire="skip", slot=BUSY).action == "coalesce"


def test_coalesce__skip_with_pending_coalesced_and_occupied_slot_absorbs_the_missed_range():
    # Regression (tests/schedules/test_coalescing.py has the database twin): the slot is busy and
    # [02:00, 02:00] is pending; 03:00-05:00 were missed. Recording them as skipped would put
    # them inside the pending range once 06:00 extends it to [02:00, 06:00].
    slot = SlotState(occupied=True, pending_coalesced_last=t(hours=2))
    d = run(Every(H), t(hours=2), t(hours=5, minutes=5), misfire="skip", slot=slot)
    assert (d.action, d.first, d.last, d.count) == ("coalesce", t(hours=3), t(hours=5), 3)
    assert (d.new_cursor, d.next_due) == (t(hours=5), t(hours=6))
    assert not d.produces_work and d.occurrence_kind == "coalesced"


def test_coalesce__skip_with_pending_coalesced_and_free_slot_absorbs_the_missed_range():
    # The same rule as for nominal and recovery: the pending occurrence runs in this pass and
    # covers the missed range; no second run, no range beside it.
    slot = SlotState(occupied=False, pending_coalesced_last=t(hours=2))
    d = run(Every(H), t(hours=2), t(hours=5), misfire="skip", slot=slot)
    assert (d.action, d.first, d.last, d.count) == ("coalesce", t(hours=3), t(hours=5), 3)


def test_coalesce__existing_pending_coalesced_absorbs_new_instants_even_when_slot_is_free():
    slot = SlotState(occupied=False, pending_coalesced_last=t(hours=2))
    d = run(Every(H), t(hours=2), t(hours=3), slot=slot)
    assert (d.action, d.first, d.last) == ("coalesce", t(hours=3), t(hours=3))
    assert d.evidence["pending_coalesced_last"] == "2030-01-01T02:00:00.000000+00:00"


def test_coalesce__free_slot_without_pending_runs_nominal():
    assert run(Every(H), T0, t(hours=1), slot=FREE).action == "nominal"


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(("misfire", "overlap"), [("run_twice", "queue_one"),
                                                  ("RUN_ONCE", "queue_one"),
                                                  (None, "queue_one"),
                                                  ("run_once", "allow"),
                                                  ("run_once", "queue_all")])
def test_policy__unknown_name_is_refused_with_ds111_even_for_a_noop(misfire, overlap):
    with pytest.raises(InvalidSchedulePolicy) as info:
        run(Every(H), T0, T0, misfire=misfire, overlap=overlap)
    assert info.value.code == "DS111"


@pytest.mark.parametrize("window", [timedelta(0), -US])
def test_policy__non_positive_safety_window_is_refused_with_ds102(window):
    with pytest.raises(NonPositiveDuration):
        run(Every(H), T0, t(hours=1), window=window)


def test_policy__safety_window_must_be_a_timedelta():
    with pytest.raises(InvalidArgument):
        run(Every(H), T0, t(hours=1), window=3600)


@pytest.mark.parametrize("slot", [None, True, SlotState(occupied=1)])
def test_slot__must_be_a_slot_state_with_bool_occupied(slot):
    with pytest.raises(InvalidArgument):
        run(Every(H), T0, t(hours=1), slot=slot)


def test_decide__naive_cutoff_is_refused_with_ds103():
    with pytest.raises(NaiveDatetime):
        run(Every(H), T0, datetime(2030, 1, 1, 5))


def test_decide__naive_pending_coalesced_last_is_refused_with_ds103():
    with pytest.raises(NaiveDatetime):
        run(Every(H), T0, t(hours=1), slot=SlotState(False, datetime(2030, 1, 1)))


def test_decide__non_spec_is_invalid_spec():
    with pytest.raises(InvalidScheduleSpec):
        run({"every": 3600}, T0, t(hours=1))


def test_decide__cursor_before_acceptance_is_unevaluable_not_backfilled():
    with pytest.raises(UnevaluableGeneration) as info:
        run(Every(H, anchor=t(days=-1)), t(hours=-5), t(hours=1))
    assert info.value.context["reason"] == "cursor_before_acceptance"
