"""Crash barriers of the Work runtime, with real processes (issue 3; docs/protocol/schedules.md rule
S9).

``manage.py process_work`` runs in a subprocess against the test database with
``DURABLE_SCHEDULE_CRASH_AT`` armed, and dies (``os._exit``) after the permit commit or after
the effect, before the outcome. Recovery then runs after the lease expired (controlled clock):
``idempotent`` Work is retried; ``reconcile_before_retry`` Work asks its reconciler and never
repeats an effect that happened; an Unknown verdict suspends it for an operator's proof.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from demo.models import Effect

from durable_schedule import work
from durable_schedule.barriers import (
    CRASH_EXIT_CODE,
    WORK_EFFECT_BEFORE_OUTCOME,
    WORK_PERMIT_AFTER_COMMIT,
)
from tests.conftest import T0, database_url
from tests.work.conftest import MIN, permits, run_pass, work_row

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def worker(crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_SCHEDULE_CRASH")}
    env["DATABASE_URL"] = database_url()
    if crash_at:
        env["DURABLE_SCHEDULE_CRASH_AT"] = crash_at
    done = subprocess.run(
        [sys.executable, "testproject/manage.py", "process_work", "--lease-owner", "subprocess",
         "--max-items", "5"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    expected = CRASH_EXIT_CODE if crash_at else 0
    assert done.returncode == expected, done.stderr[-3000:]
    return done


def accept(name: str, payload: dict):
    work.autodiscover()
    return work.lookup(name, "v1").enqueue(scope="tenant-a", command="order-1",
                                           idempotency_key="invoice-1", payload=payload).work_id


def effects(work_id) -> int:
    return Effect.objects.filter(work_id=work_id).count()


def test_crash__idempotent_work_killed_after_its_effect_is_retried(committed_clock):
    work_id = accept("demo.touch", {})
    worker(WORK_EFFECT_BEFORE_OUTCOME)
    assert effects(work_id) == 1 and work_row(work_id, "state") == ("running",)
    committed_clock.advance(MIN)  # the dead worker's lease expires
    assert run_pass().recovered == 1
    committed_clock.advance(timedelta(seconds=10))  # the legacy backoff after a lost attempt
    assert run_pass().succeeded == 1
    assert effects(work_id) == 2  # repeated, as the idempotent promise allows
    assert [p[2] for p in permits(work_id)] == [None, "succeeded"]


def test_crash__reconciled_work_killed_after_its_effect_is_not_repeated(committed_clock):
    work_id = accept("billing.send_invoice", {"order": 42})
    worker(WORK_EFFECT_BEFORE_OUTCOME)
    assert effects(work_id) == 1
    committed_clock.set(T0 + 5 * MIN)
    out = worker().stdout  # recovery by a fresh worker process
    assert "reconciled=1" in out and "succeeded=1" in out and "admitted=0" in out
    assert effects(work_id) == 1
    assert work_row(work_id, "state", "attempt") == ("succeeded", 1)
    assert permits(work_id) == [(1, 1, "applied", "reconciler")]


def test_crash__reconciled_work_killed_after_the_permit_runs_its_effect_once(committed_clock):
    work_id = accept("billing.send_invoice", {"order": 42})
    worker(WORK_PERMIT_AFTER_COMMIT)
    assert effects(work_id) == 0 and permits(work_id) == [(1, 1, None, None)]
    committed_clock.set(T0 + 5 * MIN)
    counts = run_pass()
    assert (counts.reconciled, counts.admitted, counts.succeeded) == (1, 1, 1)
    assert effects(work_id) == 1
    assert permits(work_id) == [(1, 1, "not_applied", "reconciler"),
                                (2, 2, "succeeded", "executor")]


def test_crash__unknown_verdict_suspends_until_an_operator_proves_it(committed_clock):
    work_id = accept("billing.send_invoice", {"order": 42, "reconcile": "unknown"})
    worker(WORK_EFFECT_BEFORE_OUTCOME)
    committed_clock.set(T0 + 5 * MIN)
    assert run_pass().suspended == 1
    assert work_row(work_id, "state", "suspension_reason") == (
        "suspended", "reconciliation_unknown")
    recorded = work.record_proof("tenant-a", work_id, "applied", actor="ops@example",
                                 result={"invoice": 42}, expected_permit_no=1)
    assert (recorded.permit_no, recorded.state) == (1, "succeeded")
    assert effects(work_id) == 1 and run_pass().claimed == 0
