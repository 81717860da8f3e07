"""docs/protocol/schedules.md rule S5 with the processor: an update supersedes unstarted occurrences
of older generations, while a started old-generation Work keeps the slot; a claim taken before an
API change is superseded (the dispatch revision moved) and the pass writes nothing for it."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from tests.schedules.conftest import (
    MINUTE,
    OWNER,
    SCOPE,
    SECOND,
    TEN,
    at,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    process,
    rows,
    run_pass,
    set_work_state,
    take_claims,
    works,
)

pytestmark = pytest.mark.django_db



def test_update__supersedes_unstarted_occurrences_and_old_work_keeps_the_slot(clock, target):
    create("s", schedules.Every(TEN), target)
    run_pass(clock, at(10))
    [(old_work, *_)] = works()
    set_work_state(old_work, "running")
    run_pass(clock, at(20))  # generation 1 coalesced, pending
    clock.set(at(22))
    schedules.update(SCOPE, "s", expected_revision=1, spec=schedules.Every(5 * MINUTE))
    assert [(o[0], o[1], o[4]) for o in occurrences("s")] == [
        (1, "nominal", "materialized"), (1, "coalesced", "superseded")]
    assert [e for e, _, d in history("s")][-1] == "updated"
    assert history("s")[-1][2]["superseded"][0]["generation"] == 1
    # The started generation-1 Work still occupies the slot: generation 2 instants coalesce.
    counts = run_pass(clock, at(27))
    assert (counts.coalesced, counts.materialized) == (1, 0)
    assert [(o[0], o[1], o[2], o[4]) for o in occurrences("s")][-1] == (
        2, "coalesced", at(27), "pending")
    # When it finishes, the generation-2 coalesced occurrence runs at once.
    clock.set(at(29))
    set_work_state(old_work, "succeeded")
    assert dispatch("s")[0] == at(29)
    counts = run_pass(clock)
    assert counts.materialized == 1
    assert works()[-1][1] == "pending" and len(works()) == 2


def test_claim__taken_before_an_update_is_superseded_and_writes_nothing(clock, target):
    create("s", schedules.Every(TEN), target)
    clock.set(at(10))
    [held] = take_claims(OWNER, 30 * SECOND, 1)
    schedules.update(SCOPE, "s", expected_revision=1, spec=schedules.Every(TEN))
    assert dispatch("s")[0:2] == (at(20), None)  # re-armed: due at the new instant, no lease
    after_update = (dispatch("s"), definition("s"))
    outcome = process(held, OWNER)
    assert outcome.action == "superseded"
    assert (dispatch("s"), definition("s")) == after_update
    assert occurrences("s") == [] and works() == []


def test_claim__a_lease_taken_over_after_expiry_supersedes_the_old_holder(clock, target):
    create("s", schedules.Every(TEN), target)
    clock.set(at(10))
    [first] = take_claims("worker-1", 30 * SECOND, 1)
    clock.set(at(10) + 31 * SECOND)
    [second] = take_claims("worker-2", 30 * SECOND, 1)
    assert process(first, "worker-1").action == "superseded"
    assert process(second, "worker-2").action == "nominal"
    assert len(works()) == 1


def test_claim__of_a_suspended_schedule_is_a_noop_that_clears_the_lease(clock, target):
    create("s", schedules.Every(TEN), target)
    clock.set(at(10))
    [held] = take_claims(OWNER, 30 * SECOND, 1)
    # An owner-side edit that bypasses the API (so the claim is not superseded).
    rows("update durable_schedule_definition set state = 'suspended',"
         " suspension_reason = 'operator' returning 1")
    outcome = process(held, OWNER)
    assert outcome.action == "noop"
    assert dispatch("s")[0:2] == (None, None)
