"""Adversarial review, round 6: bad input to ``process_work_pass`` is a clear DS-coded error
raised before the database is touched, and it changes nothing (docs/work.md)."""

from __future__ import annotations

import pytest

from durable_schedule import work
from durable_schedule.errors import DurableError
from tests.work.conftest import dispatch, history, work_row

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("kwargs", "code"), [
    # make_interval rounds to whole microseconds: below one the store refused with a raw
    # DataError from the claim statement, after the pass had started.
    ({"lease_seconds": 1e-9}, "DS404"),
    ({"lease_seconds": 4e-7}, "DS404"),
    ({"using": "no-such-alias"}, "DS406"),  # was Django's ConnectionDoesNotExist
    ({"using": "no-such-alias", "concurrency": 2}, "DS406"),
    ({"using": 7}, "DS406"),
    ({"stop": True}, "DS406"),  # was a TypeError ("'bool' object is not callable")
    ({"stop": "yes"}, "DS406"),
    ({"queues": 5}, "DS406"),  # was a TypeError ("'int' object is not iterable")
])
def test_process_work_pass__bad_input_is_ds_coded_and_changes_nothing(clock, define, kwargs,
                                                                       code):
    d = define("test.inputs")
    d.executor(lambda ctx, payload: {"ran": True})
    work_id = d.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1",
                        payload={}).work_id
    before = (work_row(work_id, "state", "attempt"), dispatch(work_id), history(work_id))
    with pytest.raises(DurableError) as caught:
        work.process_work_pass(**kwargs)
    assert caught.value.code == code, caught.value
    assert (work_row(work_id, "state", "attempt"), dispatch(work_id), history(work_id)) == before


def test_process_work_pass__a_microsecond_claim_lease_is_accepted(clock, define):
    d = define("test.inputs.edge")
    d.executor(lambda ctx, payload: {"ran": True})
    work_id = d.enqueue(scope="tenant-a", command="c-1", idempotency_key="k-1",
                        payload={}).work_id
    counts = work.process_work_pass(lease_seconds=1e-6, heartbeat=False)
    assert counts.succeeded == 1
    assert work_row(work_id, "state") == ("succeeded",)
