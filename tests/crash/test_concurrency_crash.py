"""A ``process_work --concurrency N`` worker that dies at a Work barrier (``os._exit`` in one slot
thread takes the whole process, with every other slot mid-attempt and outcomes waiting for
their group commit), then recovered by a fresh worker after the leases expired: the crash-proof
invariants hold (tests/crash/invariants.py), every Work ends succeeded, and no
``reconcile_before_retry`` Work performs its effect twice. The other crash tests run the
sequential worker; this is the concurrent pipeline's (docs/work.md "Concurrency")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from durable_schedule import schedules
from tests.conftest import T0
from tests.crash import harness, invariants
from tests.crash.harness import WORK
from tests.crash.invariants import rows
from tests.crash.passes import schedule_passes, settle

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]

HOUR = timedelta(hours=1)
#: Past an admitted attempt's lease (the demo invoice's retry policy: one minute).
PAST_ATTEMPT_LEASE = timedelta(minutes=1, seconds=1)
WORKS = 12
CONCURRENT_ARGS = ("--lease-seconds", str(harness.LEASE_SECONDS), "--max-items", "1000",
                   "--batch", "10", "--concurrency", "4")


@pytest.mark.parametrize("barrier", harness.WORK_BARRIERS)
def test_crash__a_concurrent_worker_dies_mid_batch_and_nothing_runs_twice(
        committed_clock, invoice, barrier):
    with transaction.atomic():
        for n in range(WORKS):
            schedules.create(f"crash-{n % 3}", f"w{n}", schedules.Every(HOUR),
                             invoice.target(payload={"order": n}))
    committed_clock.set(T0 + HOUR)
    schedule_passes()
    harness.crash(WORK, barrier, *CONCURRENT_ARGS)
    invariants.check(settled=False).assert_clean()
    assert rows("select count(*) from durable_work where state = 'running'")[0][0] >= 1
    committed_clock.advance(PAST_ATTEMPT_LEASE)
    harness.recover(WORK, *CONCURRENT_ARGS)
    settle(committed_clock)
    report = invariants.check(settled=True)
    report.assert_clean()
    assert report.works == {"succeeded": WORKS}
    # reconcile_before_retry: one effect per Work, whatever the crash cut.
    assert rows("select count(*), count(distinct work_id) from demo_effect") == [(WORKS, WORKS)]
