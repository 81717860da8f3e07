"""A database error raised where a scoped, routed or dispatcher transaction enters its role
and scope (store/transactions.py) keeps its SQLSTATE. These entry points re-raised the error
``from`` itself, so the error became its own cause and the psycopg error with the SQLSTATE was
no longer reachable: a lock timeout (55P03) in the batch's locking read, sent in one pipeline
with the scope entry, read as an OperationalError without SQLSTATE -- a dropped connection to
the retry and outage classifications (runner/retry.py, runner/outage.py), ``sqlstate=None``
in its DS405."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError, connection

from durable_schedule import schedules
from durable_schedule.processor.batch import process_batch
from durable_schedule.runner.outage import is_connection_loss
from durable_schedule.runner.retry import sqlstate_of
from tests.conftest import T0, database_url
from tests.schedules.conftest import HOUR, OWNER, SCOPE, occurrences, take_claims

# The blocking lock is held by a second connection: the rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_lock_timeout_in_the_batchs_locking_read__keeps_sqlstate_55p03(
        committed_clock, target):
    for name in ("s", "t"):
        schedules.create(SCOPE, name, schedules.Every(HOUR), target)
    committed_clock.set(T0 + HOUR)
    claims = take_claims(max_rows=10)
    assert len(claims) == 2
    blocker = psycopg.connect(database_url())
    blocker.execute("select 1 from durable_schedule_definition where schedule_id = 's'"
                    " for update")
    with connection.cursor() as cur:
        cur.execute("set lock_timeout = 300")
    try:
        with pytest.raises(OperationalError) as err:
            process_batch(claims, OWNER)
    finally:
        blocker.rollback()
        blocker.close()
        with connection.cursor() as cur:
            cur.execute("reset lock_timeout")
    assert err.value.__cause__ is not err.value
    assert sqlstate_of(err.value) == "55P03"
    assert not is_connection_loss(err.value)
    assert occurrences("s") == [] and occurrences("t") == []
