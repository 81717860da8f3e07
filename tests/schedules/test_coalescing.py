"""docs/protocol/schedules.md rule S4, docs/protocol/schedules.md "Occurrence materialization": a
nonterminal Work occupies the schedule-wide slot; later instants form at most one pending coalesced
occurrence whose last instant only moves forward; a terminal Work requeues dispatch in its own
transaction (trigger), and the next pass runs the coalesced occurrence without waiting for an
interval."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    OWNER,
    SCOPE,
    SECOND,
    TEN,
    at,
    create,
    dispatch,
    history,
    occurrences,
    one,
    process,
    rows,
    run_pass,
    set_work_state,
    take_claims,
    works,
)

pytestmark = pytest.mark.django_db



def coalesced(schedule_id="s"):
    return [o[2:5] for o in occurrences(schedule_id) if o[1] == "coalesced"]


@pytest.fixture
def busy(clock, target):
    """Every 10 minutes; the 12:10 Work is accepted and still pending at 12:20 and 12:30."""
    create("s", schedules.Every(TEN), target)
    run_pass(clock, at(10))
    [(first_work, *_)] = works()
    assert run_pass(clock, at(20)).coalesced == 1
    assert coalesced() == [(at(20), at(20), "pending")]
    assert run_pass(clock, at(30)).coalesced == 1
    return first_work


def test_long_running_work__later_instants_form_one_pending_coalesced_occurrence(clock, busy):
    # The identity (first) stays; the last instant moved forward; no second Work.
    assert coalesced() == [(at(20), at(30), "pending")]
    set_work_state(busy, "running")
    assert run_pass(clock, at(40)).coalesced == 1
    assert coalesced() == [(at(20), at(40), "pending")]
    assert len(works()) == 1
    assert dispatch("s")[0] == at(50)
    assert [e for e, _, _ in history("s")][-3:] == ["coalesced"] * 3


def test_terminal_work__requeues_dispatch_now_and_the_next_pass_runs_the_coalesced(clock, busy):
    clock.set(at(33))
    _, _, revision = dispatch("s")
    assert set_work_state(busy, "succeeded") == 1
    assert dispatch("s") == (at(33), None, revision + 1)  # due now, not at 12:40
    counts = run_pass(clock, at(33))
    assert (counts.claimed, counts.materialized, counts.noop) == (1, 1, 0)
    assert counts.outcomes[0].materialized_kind == "coalesced"
    [(_, kind, first, last, state, work_id)] = [o for o in occurrences("s")
                                                if o[1] == "coalesced"]
    assert (first, last, state) == (at(20), at(30), "materialized")
    [occurrence_id] = rows("select id from durable_schedule_occurrence where work_id = %s",
                           (work_id,))[0]
    assert works()[-1][0:3] == (work_id, "pending", occurrence_id)
    assert dispatch("s")[0] == at(40)


@pytest.mark.parametrize("state", ["failed", "expired", "canceled"])
def test_terminal_work__every_terminal_state_releases_the_slot(clock, busy, state):
    clock.set(at(31))
    set_work_state(busy, state)
    assert dispatch("s")[0] == at(31)


@pytest.mark.parametrize("state", ["running", "suspended", "pending"])
def test_nonterminal_work__retrying_or_suspended_work_does_not_release_the_slot(
        clock, busy, state):
    clock.set(at(31))
    before = dispatch("s")
    set_work_state(busy, "running")
    set_work_state(busy, state)  # e.g. a retry returns running Work to pending
    assert dispatch("s") == before
    assert run_pass(clock, at(35)).claimed == 0
    counts = run_pass(clock, at(40))
    assert (counts.coalesced, counts.materialized) == (1, 0)


def test_free_slot__the_pending_coalesced_absorbs_new_instants_then_runs_once(clock, busy):
    # The Work finishes, but no pass runs until after 12:40 (e.g. processors were busy).
    clock.set(at(31))
    set_work_state(busy, "succeeded")
    counts = run_pass(clock, at(41))
    assert (counts.coalesced, counts.materialized) == (1, 1)
    assert coalesced() == [(at(20), at(40), "materialized")]
    assert [o[1] for o in occurrences("s")] == ["nominal", "coalesced"]
    assert len(works()) == 2


def test_trigger__leaves_a_leased_dispatch_row_to_its_holder(clock, busy):
    clock.set(at(40))
    [held] = take_claims(OWNER, 30 * SECOND, 1)
    leased = dispatch("s")
    assert leased[1] == OWNER
    set_work_state(busy, "succeeded")
    assert dispatch("s") == leased  # untouched: the holder computes the next due time
    outcome = process(held, OWNER)
    # The holder saw the free slot: the 12:40 instant joined the coalesced range, which ran.
    assert (outcome.action, outcome.materialized_kind) == ("coalesce", "coalesced")
    assert coalesced() == [(at(20), at(40), "materialized")]
    assert dispatch("s")[0:2] == (at(50), None)


def test_trigger__ignores_work_without_a_pending_coalesced_occurrence(clock, target):
    create("s", schedules.Every(TEN), target)
    run_pass(clock, at(10))
    [(work_id, *_)] = works()
    before = dispatch("s")
    clock.set(at(12))
    set_work_state(work_id, "succeeded")
    assert dispatch("s") == before


def test_delete__cancels_the_pending_coalesced_occurrence_and_the_trigger_stays_quiet(
        clock, busy):
    schedules.delete(SCOPE, "s")
    assert coalesced() == [(at(20), at(30), "canceled")]
    assert [w[1] for w in works()] == ["pending"]  # accepted Work is not touched by delete
    before = dispatch("s")
    set_work_state(busy, "succeeded")
    assert dispatch("s") == before == (None, None, before[2])


def test_trigger__runs_as_the_invoker_under_rls_with_a_pinned_search_path():
    prosecdef, config, public = one(
        "select p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'EXECUTE')"
        " from pg_proc p where p.proname = 'durable_schedule_requeue_coalesced'")
    assert prosecdef is False  # row-level security applies to what it reads and writes
    assert any(c.startswith("search_path=") and c.endswith("pg_temp") for c in config)
    assert public is False


def test_skip__a_missed_range_behind_a_pending_coalesced_occurrence_joins_it(clock, target):
    # Regression for a protocol defect (docs/schedules.md "Overlap"): the missed range used to be
    # recorded as skipped [12:30, 12:50] beside the pending coalesced [12:20, 12:20]; the 13:00
    # instant then extended the pending range to [12:20, 13:00], over the skipped one, so 12:30,
    # 12:40 and 12:50 were covered twice (skipped and run).
    create("s", schedules.Every(TEN), target, misfire="skip")
    run_pass(clock, at(10))
    [(first_work, *_)] = works()  # the 12:10 Work stays pending: the slot is busy throughout
    assert run_pass(clock, at(20)).coalesced == 1
    counts = run_pass(clock, at(55))  # 12:30, 12:40, 12:50 found late (within the window)
    assert (counts.coalesced, counts.skipped, counts.materialized) == (1, 0, 0)
    assert coalesced() == [(at(20), at(50), "pending")]
    assert run_pass(clock, at(60)).coalesced == 1
    assert occurrences("s") == [
        (1, "nominal", at(10), at(10), "materialized", first_work),
        (1, "coalesced", at(20), at(60), "pending", None),
    ]
    set_work_state(first_work, "succeeded")
    counts = run_pass(clock, at(61))
    assert (counts.materialized, counts.skipped) == (1, 0)
    [(_, _, first, last, state, second_work)] = [o for o in occurrences("s")
                                                 if o[1] == "coalesced"]
    assert (first, last, state) == (at(20), at(60), "materialized")
    assert [w[0] for w in works()] == [first_work, second_work]


def test_skip__a_missed_range_behind_a_busy_slot_alone_stays_skipped(clock, target):
    # Nothing is pending, so nothing would run for the missed range: skip wins, and the next
    # instant starts a coalesced occurrence after the skipped range, never around it.
    create("s", schedules.Every(TEN), target, misfire="skip")
    run_pass(clock, at(10))
    [(first_work, *_)] = works()
    counts = run_pass(clock, at(35))  # 12:20, 12:30 found late; the 12:10 Work still pending
    assert (counts.skipped, counts.coalesced) == (1, 0)
    assert run_pass(clock, at(40)).coalesced == 1
    assert run_pass(clock, at(50)).coalesced == 1
    assert occurrences("s") == [
        (1, "nominal", at(10), at(10), "materialized", first_work),
        (1, "recovery", at(20), at(30), "skipped", None),
        (1, "coalesced", at(40), at(50), "pending", None),
    ]
