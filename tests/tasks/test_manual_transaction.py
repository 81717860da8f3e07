"""``enqueue()`` under manual transaction management (autocommit off, outside ``atomic()``) is
refused before anything is written (DS274, docs/tasks.md "Transactions").

Before, the Work was written into the caller's open manual transaction and then ``enqueue()``
raised Django's ``TransactionManagementError`` (``on_commit()`` cannot be used there, and
``task_enqueued`` waits for the commit): a caller that committed anyway had a task that
``enqueue()`` had reported as failed -- enqueued again on a retry, it ran twice.
"""

from __future__ import annotations

import pytest
from demo import tasks as demo
from django.db import transaction

from durable_schedule.errors import EnqueueInManualTransaction
from tests.work.conftest import rows

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue__under_manual_transaction_management_is_ds274_and_writes_nothing(
        committed_clock, signalled):
    transaction.set_autocommit(False)
    try:
        with pytest.raises(EnqueueInManualTransaction) as raised:
            demo.add.enqueue(1, 2)
        transaction.commit()  # what the caller commits holds no task
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)
    assert raised.value.code == "DS274"
    assert rows("SELECT 1 FROM durable_work") == []
    assert signalled == []


def test_enqueue__in_atomic_with_autocommit_off_is_accepted_with_the_commit(committed_clock,
                                                                            signalled):
    transaction.set_autocommit(False)
    try:
        with transaction.atomic():
            result = demo.add.enqueue(1, 2)
        transaction.commit()
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)
    assert rows("SELECT work_id::text FROM durable_work") == [(result.id,)]
