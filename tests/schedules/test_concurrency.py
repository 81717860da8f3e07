"""docs/protocol/index.md "Quality bars": "Concurrency": four ``process_schedules`` processes racing
over the same 1,000 due schedules produce exactly 1,000 occurrences and 1,000 Work — no duplicate,
none lost."""

from __future__ import annotations

import re

import pytest
from django.db import transaction

from durable_schedule import schedules
from tests.schedules import processes
from tests.schedules.conftest import HOUR, SECOND, T0, rows

SCHEDULES = 1000
SCOPES = 10


@pytest.mark.django_db(transaction=True)
def test_four_processes__race_over_1000_due_schedules_without_duplicates(
        committed_clock, target):
    with transaction.atomic():
        for i in range(SCHEDULES):
            schedules.create(f"tenant-{i % SCOPES}", f"race-{i:04d}", schedules.Every(HOUR),
                             target)
    committed_clock.set(T0 + HOUR + SECOND)
    # Claims of 10 rows make the four processes interleave over the due set (one claim of
    # 1,000 would let the first process take everything before the others start).
    running = [processes.start("--max-schedules", "1000", "--claim-batch", "10",
                               "--passes", "20", "--lease-owner", f"racer-{n}")
               for n in range(4)]
    outputs = [p.communicate(timeout=300) for p in running]
    busy = [int(re.search(r"total: claimed=(\d+)", out).group(1)) for out, _ in outputs
            if "total:" in out]
    for proc, (_, err) in zip(running, outputs, strict=True):
        assert proc.returncode == 0, err
    claimed = materialized = 0
    for out, _ in outputs:
        for line in out.splitlines():
            if line.startswith("pass "):
                claimed += int(re.search(r"claimed=(\d+)", line).group(1))
                materialized += int(re.search(r"materialized=(\d+)", line).group(1))
    assert (claimed, materialized) == (SCHEDULES, SCHEDULES)
    assert sum(1 for n in busy if n > 0) >= 2, busy  # a real race, not one process alone
    assert rows("select count(*), count(distinct (scope_id, schedule_id)),"
                " count(*) filter (where state = 'materialized' and kind = 'nominal'"
                " and first_nominal_utc = %s) from durable_schedule_occurrence",
                (T0 + HOUR,)) == [(SCHEDULES, SCHEDULES, SCHEDULES)]
    assert rows("select count(*), count(distinct work_id), count(distinct source_occurrence_id)"
                " from durable_work") == [(SCHEDULES, SCHEDULES, SCHEDULES)]
    assert rows("select count(*) from durable_schedule_occurrence o join durable_work w"
                " on w.scope_id = o.scope_id and w.work_id = o.work_id"
                " and w.source_occurrence_id = o.id") == [(SCHEDULES,)]
    assert rows("select count(*) from durable_schedule_dispatch"
                " where lease_owner is null and due_at = %s", (T0 + 2 * HOUR,)) == [(SCHEDULES,)]
