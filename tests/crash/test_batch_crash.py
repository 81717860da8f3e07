"""A batched pass killed with SIGKILL in the middle of its batch (docs/reliability.md
"Batches"): a real ``process_schedules`` subprocess whose one transaction holds thirty
schedules of one scope is stopped inside its multi-row writes — blocked on a row the test
holds uncommitted, so the kill lands exactly there — and killed with ``kill -9``. Nothing of
the batch may survive half-written, and recovery must produce exactly one occurrence and one
Work per due instant: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import signal
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import transaction

from durable_schedule import schedules
from durable_schedule.processor.bridge import OccurrenceIdentity, derive_link
from tests.conftest import T0, database_url
from tests.crash import harness, invariants
from tests.crash.harness import SCHEDULES
from tests.crash.invariants import rows
from tests.crash.passes import settle

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]

HOUR = timedelta(hours=1)
SCOPE, OTHER = "batch-a", "batch-b"
PAST_CLAIM_LEASE = timedelta(seconds=harness.LEASE_SECONDS + 1)
NAMES = [f"b{i:02d}" for i in range(30)]
VICTIM = NAMES[15]

#: What the test holds uncommitted. Both block the batch's one statement that inserts the new
#: occurrences and accepts their Work ("bridge occurrences"): at a different row of it.
PLANTS = {
    # The occurrence identity of the victim: the statement waits on its unique key, after the
    # occurrences before it were inserted.
    "occurrence insert": (
        "insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,"
        " first_nominal_utc, last_nominal_utc, state, created_at, updated_at)"
        " values (%(scope)s, %(victim)s, 1, 'nominal', %(due)s, %(due)s, 'pending', now(),"
        " now())"),
    # The victim's derived Work id: every occurrence is inserted, the statement waits on the
    # Work key, after the Work rows before it were written.
    "work insert": (
        "insert into durable_work (scope_id, work_id, command_id, idempotency_key, work_name,"
        " work_version, payload, provider_safety, fingerprint_schema, fingerprint_digest,"
        " retry_policy, accepted_at, due_at, updated_at) values (%(scope)s, %(work_id)s,"
        " 'planted', 'planted', 'x', 'v1', '{}', 'idempotent', 'v1', 'x', '{}', now(), now(),"
        " now())"),
}


def occurrences(schedule_id: str, scope: str = SCOPE) -> list[tuple]:
    return rows("select kind, first_nominal_utc, state, work_id is not null"
                " from durable_schedule_occurrence where scope_id = %s and schedule_id = %s"
                " order by first_nominal_utc, kind", (scope, schedule_id))


def waiting_statement(app: str, seconds: float = 60) -> str:
    """The statement the subprocess's backend waits in, once it waits on a lock."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = rows("select query from pg_stat_activity where application_name = %s"
                     " and wait_event_type = 'Lock'", (app,))
        if found:
            return found[0][0]
        time.sleep(0.05)  # polling a real subprocess, not waiting for protocol time
    raise AssertionError(f"{app} never waited on the planted row")


@pytest.mark.parametrize("where", sorted(PLANTS))
def test_kill_9__in_the_middle_of_a_batch_loses_nothing_and_duplicates_nothing(
        committed_clock, invoice, where):
    with transaction.atomic():
        for i, name in enumerate(NAMES):
            schedules.create(SCOPE, name, schedules.Every(HOUR),
                             invoice.target(payload={"order": i}))
        schedules.create(OTHER, "bystander", schedules.Every(HOUR),
                         invoice.target(payload={"order": 99}))
    committed_clock.set(T0 + HOUR)
    plant = PLANTS[where]
    work_id = derive_link(OccurrenceIdentity(SCOPE, VICTIM, 1, "nominal", T0 + HOUR)).work_id
    app = f"batch-kill-{where.split()[0]}"
    blocker = psycopg.connect(database_url())  # the owner, in a transaction of its own
    try:
        blocker.execute(plant, {"scope": SCOPE, "victim": VICTIM, "due": T0 + HOUR,
                                "work_id": work_id})
        proc = harness.start(SCHEDULES, app=app)
        try:
            waiting = waiting_statement(app)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
    finally:
        blocker.rollback()
        blocker.close()
    assert proc.returncode == -signal.SIGKILL
    # The batch was inside its multi-row write (every read and lock behind it) when it died.
    # (pg_stat_activity shows the head of the statement, cut at track_activity_query_size.)
    assert "each occurrence identity inserted already linked" in waiting, waiting
    # Nothing of the killed batch survived; the store is consistent before any recovery.
    invariants.check(settled=False).assert_clean()
    assert all(occurrences(name) == [] for name in NAMES)
    assert rows("select count(*) from durable_work where scope_id = %s", (SCOPE,)) == [(0,)]
    committed_clock.advance(PAST_CLAIM_LEASE)
    harness.recover(SCHEDULES)
    settle(committed_clock)
    invariants.check(settled=True).assert_clean()
    for name in NAMES:
        assert occurrences(name) == [("nominal", T0 + HOUR, "materialized", True)]
    assert rows("select count(*) from durable_work where scope_id = %s", (SCOPE,)) == [(30,)]
    assert occurrences("bystander", OTHER) == [("nominal", T0 + HOUR, "materialized", True)]
