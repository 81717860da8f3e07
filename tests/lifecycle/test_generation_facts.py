"""Bounds, overlap policies and jitter (issue 14 items 4, 5, 6 and 8) on the controlled clock:
end_at and max_runs complete the schedule; skip and allow_all sequences written out per
instant, Temporal-style; jitter offsets identical across two runners and within bounds; skipped
instants counted per cause."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import InvalidBounds, InvalidJitter, InvalidSchedulePolicy
from durable_schedule.evaluation import jitter as jittering
from tests.schedules.conftest import (
    MINUTE,
    SCOPE,
    T0,
    TEN,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db


def finish_all() -> None:
    for work_id, state, *_ in works():
        if state not in ("succeeded", "failed", "expired", "canceled"):
            set_work_state(work_id, "succeeded")


# ---------------------------------------------------------------- bounds
def test_end_at__completes_the_schedule_after_its_last_instant(clock, target):
    create("s", schedules.Every(TEN), target, end_at=T0 + 25 * MINUTE)
    for minute in (10, 20):
        run_pass(clock, T0 + minute * MINUTE)
        finish_all()
    info = schedules.get(SCOPE, "s")
    assert info.state == "completed" and info.end_at == T0 + 25 * MINUTE
    assert [o[2] for o in occurrences("s")] == [T0 + TEN, T0 + 2 * TEN]
    assert dispatch("s")[0] is None
    assert history("s")[-1][0] == "materialized" and history("s")[-1][2]["completed"]


def test_end_at__a_late_pass_runs_only_the_instants_up_to_it(clock, target):
    create("s", schedules.Every(TEN), target, end_at=T0 + 25 * MINUTE)
    run_pass(clock, T0 + 50 * MINUTE)
    [(_, kind, first, last, _, _)] = occurrences("s")
    assert (kind, first, last) == ("recovery", T0 + TEN, T0 + 2 * TEN)
    assert schedules.get(SCOPE, "s").state == "completed"


def test_max_runs__counts_materialized_runs_and_completes(clock, target):
    create("s", schedules.Every(TEN), target, max_runs=2)
    run_pass(clock, T0 + TEN)
    finish_all()
    assert schedules.get(SCOPE, "s").state == "active"
    run_pass(clock, T0 + 2 * TEN)
    assert schedules.get(SCOPE, "s").state == "completed"  # the second run used the last one
    assert len(works()) == 2


def test_max_runs__survives_an_update_and_manual_runs_do_not_count(clock, target):
    create("s", schedules.Every(TEN), target, max_runs=2, overlap="allow_all")
    run_pass(clock, T0 + TEN)
    schedules.trigger(SCOPE, "s", "manual-1")
    info = schedules.get(SCOPE, "s")
    clock.set(T0 + TEN + MINUTE)
    updated = schedules.update(SCOPE, "s", expected_revision=info.revision,
                               spec=schedules.Every(TEN, anchor=T0))
    assert updated.max_runs == 2  # kept
    run_pass(clock, T0 + 2 * TEN)
    assert schedules.get(SCOPE, "s").state == "completed"
    kinds = rows("select kind, generation from durable_schedule_occurrence order by id")
    assert kinds == [("nominal", 1), ("manual", 1), ("nominal", 2)]


def test_start_at__no_instant_before_it(clock, target):
    info = create("s", schedules.Every(TEN, anchor=T0), target, start_at=T0 + 35 * MINUTE)
    assert info.next_nominal_utc == T0 + 40 * MINUTE
    run_pass(clock, T0 + 40 * MINUTE)
    assert [o[2] for o in occurrences("s")] == [T0 + 40 * MINUTE]


def test_bounds__bad_input_is_refused_and_changes_nothing(clock, target):
    with pytest.raises(InvalidBounds):
        create("s", schedules.Every(TEN), target, start_at=T0 + TEN, end_at=T0)
    with pytest.raises(InvalidBounds):
        create("s", schedules.Every(TEN), target, max_runs=0)
    with pytest.raises(InvalidJitter):
        create("s", schedules.Every(TEN), target, jitter=TEN)
    with pytest.raises(InvalidJitter):  # a Cron: its shortest gap (here every 10 min)
        create("s", schedules.Cron("*/10 * * * *"), target, jitter=TEN)
    with pytest.raises(InvalidJitter):  # the 15-minute gap of the Berlin spring night
        create("s", schedules.Cron("45 * * * *", "Europe/Berlin"), target, jitter=20 * MINUTE)
    with pytest.raises(InvalidSchedulePolicy):
        create("s", schedules.Every(TEN), target, overlap="buffer_one")
    assert rows("select count(*) from durable_schedule_definition") == [(0,)]


# ---------------------------------------------------------------- overlap, Temporal-style
def test_overlap_skip__instants_while_the_slot_is_held_are_skipped_and_counted(clock, target):
    create("s", schedules.Every(TEN), target, overlap="skip")
    # 00:10 runs; 00:20 and 00:30 arrive while it runs -> skipped; it finishes; 00:40 runs.
    run_pass(clock, T0 + TEN)
    run_pass(clock, T0 + 2 * TEN)
    run_pass(clock, T0 + 3 * TEN)
    finish_all()
    run_pass(clock, T0 + 4 * TEN)
    seq = [(o[1], o[2], o[4]) for o in occurrences("s")]
    assert seq == [("nominal", T0 + TEN, "materialized"),
                   ("recovery", T0 + 2 * TEN, "skipped"),
                   ("recovery", T0 + 3 * TEN, "skipped"),
                   ("nominal", T0 + 4 * TEN, "materialized")]
    assert json.loads(definition("s")["missed"]) == {"overlap": 2}
    assert [h[2].get("skip_cause") for h in history("s") if h[0] == "skipped"] == [
        "overlap", "overlap"]


def test_overlap_allow_all__every_instant_runs_beside_the_others(clock, target):
    create("s", schedules.Every(TEN), target, overlap="allow_all")
    for k in (1, 2, 3):
        run_pass(clock, T0 + k * TEN)  # none of them finishes
    seq = [(o[1], o[2], o[4]) for o in occurrences("s")]
    assert seq == [("nominal", T0 + k * TEN, "materialized") for k in (1, 2, 3)]
    assert len({w[1] for w in works()}) == 1 and len(works()) == 3


def test_misfire_skip__counts_the_skipped_instants(clock, target):
    create("s", schedules.Every(TEN), target, misfire="skip")
    run_pass(clock, T0 + 45 * MINUTE)
    assert json.loads(definition("s")["missed"]) == {"misfire": 4}
    assert schedules.get(SCOPE, "s").missed == {"misfire": 4}


# ---------------------------------------------------------------- jitter
def test_jitter__offset_persisted_within_bounds_and_the_work_due_then(clock, target):
    jitter = timedelta(minutes=3)
    create("s", schedules.Every(TEN), target, jitter=jitter)
    run_pass(clock, T0 + TEN)
    [(offset, first)] = rows("select jitter_us, first_nominal_utc from durable_schedule_occurrence")
    assert first == T0 + TEN  # the nominal identity did not move
    assert 0 <= offset < jitter // timedelta(microseconds=1)
    assert offset == jittering.offset_us(jitter, SCOPE, "s", 1, "nominal", T0 + TEN)
    [(due,)] = rows("select due_at from durable_work")
    assert due == T0 + TEN + timedelta(microseconds=offset)


def test_jitter__identical_across_two_runners(clock, target):
    """Two processes computing the offset of one identity agree (it is a pure function of the
    identity); the second runner here is a fresh interpreter."""
    import subprocess
    import sys

    jitter = timedelta(minutes=3)
    here = jittering.offset_us(jitter, SCOPE, "s", 1, "nominal", T0 + TEN)
    code = ("from datetime import UTC, datetime, timedelta;"
            "from durable_schedule.evaluation.jitter import offset_us;"
            f"print(offset_us(timedelta(minutes=3), {SCOPE!r}, 's', 1, 'nominal', "
            f"datetime.fromisoformat({(T0 + TEN).isoformat()!r})))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout
    assert int(there) == here


def test_durable_status__reports_paused_schedules_and_missed_instants(clock, target):
    from io import StringIO

    from django.core.management import call_command

    from durable_schedule.operations.status import collect

    create("s", schedules.Every(TEN), target, misfire="skip")
    create("p", schedules.Every(TEN), target)
    schedules.pause(SCOPE, "p", "x")
    run_pass(clock, T0 + 45 * MINUTE)
    report = collect()
    assert (report.paused_schedules, report.missed_instants) == (1, {"misfire": 4})
    assert report.to_json()["missed_instants"] == {"misfire": 4}
    out = StringIO()
    with pytest.raises(SystemExit):  # exit 1: due schedule rows and no live runner here
        call_command("durable_status", stdout=out)
    assert "paused       1 schedule\n" in out.getvalue()
    assert "missed       misfire 4" in out.getvalue()


def test_batched_pass__lifecycle_facts_decide_as_in_a_pass_of_their_own(clock, target):
    """The batched pass (processor/batch.py) takes the same lifecycle hooks: a jittered
    nominal occurrence, a max_runs completion and an overlap skip in one batch."""
    create("jit", schedules.Every(TEN), target, jitter=timedelta(minutes=3))
    create("once", schedules.Every(TEN), target, max_runs=1)
    create("skip", schedules.Every(TEN), target, overlap="skip")
    run_pass(clock, T0 + TEN, batch_size=10)
    run_pass(clock, T0 + 2 * TEN, batch_size=10)
    [(offset,)] = rows("select jitter_us from durable_schedule_occurrence"
                       " where schedule_id = 'jit' and first_nominal_utc = %s", (T0 + TEN,))
    assert offset == jittering.offset_us(timedelta(minutes=3), SCOPE, "jit", 1, "nominal",
                                         T0 + TEN)
    assert schedules.get(SCOPE, "once").state == "completed"
    assert json.loads(definition("skip")["missed"]) == {"overlap": 1}
