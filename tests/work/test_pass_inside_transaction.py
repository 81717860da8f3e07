"""``process_work_pass`` runs its own transactions: the permits commit before any executor runs
and the outcomes before the next claim. Called inside the caller's ``transaction.atomic()`` (a
view under ``ATOMIC_REQUESTS``, a task wrapped in a transaction) or with autocommit turned off,
it raised Django's bare ``RuntimeError`` (no DS code) -- or, with autocommit off, ran every
"commit" inside the caller's transaction, acknowledged only in memory. It is refused up front
with DS286, and nothing changes."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from durable_schedule.errors import PassInsideTransaction
from tests.work.conftest import permits, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)


def _accept(d):
    return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id


def test_pass_inside_atomic__refused_ds286_nothing_changes(committed_clock, define):
    d = define("test.inside_atomic")
    calls = []
    d.executor(lambda ctx, payload: calls.append(ctx.attempt))
    work_id = _accept(d)
    with transaction.atomic(), pytest.raises(PassInsideTransaction) as refused:
        run_pass()
    assert refused.value.code == "DS286"
    assert calls == [] and permits(work_id) == []
    assert work_row(work_id, "state") == ("pending",)
    assert run_pass().succeeded == 1  # outside a transaction it runs


def test_pass_with_autocommit_off__refused_ds286_nothing_changes(committed_clock, define):
    d = define("test.autocommit_off")
    calls = []
    d.executor(lambda ctx, payload: calls.append(ctx.attempt))
    work_id = _accept(d)
    connection.ensure_connection()
    transaction.set_autocommit(False)
    try:
        with pytest.raises(PassInsideTransaction):
            run_pass(concurrency=2)
    finally:
        connection.rollback()
        transaction.set_autocommit(True)
    assert calls == [] and permits(work_id) == []
    assert work_row(work_id, "state") == ("pending",)
