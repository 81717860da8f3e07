"""A batch whose schedules carry large, distinct payloads -- each legal (under the 32 MiB cap,
DS250), together more than the 256 MiB PostgreSQL allows one jsonb array -- used to roll back on
every pass ("total size of jsonb array elements exceeds the maximum", SQLSTATE 54000) before
each schedule ran alone. The batch now keeps its Work templates under a byte budget and leaves
the rest to be processed alone: no rollback, one Work per schedule, nothing duplicated."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from demo import schedule_targets

from durable_schedule import schedules
from tests.schedules.conftest import HOUR, T0, create, occurrences, rows, run_pass

pytestmark = pytest.mark.django_db

#: 9 x 30 MiB = 270 MiB of templates: over the jsonb limit, each under the 32 MiB cap.
COUNT, SIZE = 9, 30 * 1024 * 1024


def test_large_distinct_payloads__no_batch_rollback_one_work_each(clock, caplog):
    assert COUNT * SIZE > 268435455 and SIZE < 32 * 1024 * 1024
    clock.set(T0)
    for i in range(COUNT):
        target = schedule_targets.report.target(payload={"i": i, "blob": ""})
        create(f"big{i}", schedules.Every(HOUR), target)
    # Each schedule's generation 2 is its generation 1 with a 30 MiB payload, written
    # server-side (the target create stores, without encoding 270 MiB in Python first).
    rows(
        "insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
        " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
        " evaluator_version, created_by) select scope_id, schedule_id, 2, kind, spec,"
        " accepted_at_utc, jsonb_set(target, '{payload,blob}', to_jsonb(repeat('x', %s))),"
        " overlap_policy, misfire_policy, safety_window, evaluator_version, created_by"
        " from durable_schedule_generation where schedule_id like 'big%%' returning id",
        (SIZE,),
    )
    assert (
        len(
            rows(
                "update durable_schedule_definition set active_generation = 2"
                " where schedule_id like 'big%%' returning id"
            )
        )
        == COUNT
    )
    caplog.set_level(logging.WARNING, "durable_schedule.processor")
    counts = run_pass(clock, T0 + HOUR + timedelta(seconds=1))
    assert [r.getMessage() for r in caplog.records if "rolled back" in r.getMessage()] == []
    assert (counts.claimed, counts.materialized) == (COUNT, COUNT)
    # One Work per schedule, each linked from its occurrence (payloads are not read back:
    # detoasting 270 MiB would cost more than the pass).
    assert rows(
        "select count(*), count(distinct w.work_id) from durable_work w join"
        " durable_schedule_occurrence o on o.work_id = w.work_id"
    ) == [(COUNT, COUNT)]
    for i in range(COUNT):
        assert [o[1:5] for o in occurrences(f"big{i}")] == [
            ("nominal", T0 + HOUR, T0 + HOUR, "materialized")
        ]
