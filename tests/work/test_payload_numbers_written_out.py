"""docs/work.md "Size bound": the 32 MiB bound holds for a value *as PostgreSQL gives it back*.
``jsonb`` stores a number as ``numeric`` and writes it out positionally: the float ``1e+308``
(6 characters of canonical JSON, a few bytes stored) reads back as 309 digits, ``5e-324`` as
326 characters. Before, only the canonical text was bounded, so a payload of 25 MB -- 3.6
million such floats -- was accepted (975 kB stored) and could never be read again: ``work.get``
/ ``work.list`` and every worker pass that claimed it failed with PostgreSQL's raw "out of
memory" (the text passes 1 GB), and the other Work of each claim never ran. Such a value is now
refused with DS250 before anything is written, as an oversized one is; a result alike fails
its attempt."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from durable_schedule import work
from durable_schedule.errors import PayloadTooLarge
from durable_schedule.work import codec
from tests.work.conftest import count, one, run_pass, work_row

pytestmark = pytest.mark.django_db

#: 150,000 floats: about 1 MB of canonical JSON, about 46 MB as PostgreSQL writes it out.
WRITTEN_OUT_OVER_BOUND = [1e308] * 150_000


def test_written_out_lengths_are_what_postgresql_writes():
    values = [1.5e-07, 1.5e+20, -2.5e-05, 1.7976931348623157e+308, 5e-324, 1e16, 1.0, -0.0,
              0.5, 123.25, -1e300, 1e-05, 3]
    with connection.cursor() as cur:
        cur.execute("select jsonb_array_elements(%s::jsonb)::text",
                    [codec.canonical_json(values)])
        written = [row[0] for row in cur.fetchall()]
    for value, text in zip(values, written, strict=True):
        assert codec.written_out_length(value) >= len(text), (value, text)
        assert codec.written_out_length(value) <= len(text) + 1, (value, text)  # "-0.0"


def test_enqueue__floats_that_read_back_past_the_bound_are_refused(clock, define):
    d = define("t.numbers")
    d.executor(lambda ctx, payload: None)
    canonical = codec.canonical_json(WRITTEN_OUT_OVER_BOUND, limit=None)
    assert len(canonical) < codec.MAX_JSON_BYTES // 16
    with transaction.atomic():
        with pytest.raises(PayloadTooLarge) as refused:
            d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                      payload=WRITTEN_OUT_OVER_BOUND)
        with connection.cursor() as cur:  # refused in Python: the transaction is usable
            cur.execute("select 1")
            assert cur.fetchone() == (1,)
    assert refused.value.code == "DS250"
    assert refused.value.context["size"] > codec.MAX_JSON_BYTES
    assert count("durable_work") == 0
    with pytest.raises(PayloadTooLarge):
        d.request(command="c", idempotency_key="k", payload=WRITTEN_OUT_OVER_BOUND)


def test_enqueue__floats_within_the_bound_are_accepted_and_read_back(clock, define):
    d = define("t.numbers")
    d.executor(lambda ctx, payload: None)
    payload = {"big": [1e308] * 1_000, "small": [5e-324] * 1_000}
    work_id = d.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                        payload=payload).work_id
    assert len(work.get("tenant-a", work_id).payload["big"]) == 1_000
    assert one("select octet_length(payload::text) from durable_work")[0] > 600_000


def test_result__floats_that_read_back_past_the_bound_fail_the_attempt(clock, define):
    d = define("t.numbers")
    d.executor(lambda ctx, payload: WRITTEN_OUT_OVER_BOUND if payload["big"] else "ok")
    big = d.enqueue(scope="tenant-a", command="big", idempotency_key="k",
                    payload={"big": True}).work_id
    small = d.enqueue(scope="tenant-a", command="small", idempotency_key="k",
                      payload={"big": False}).work_id
    counts = run_pass(batch=10)
    assert (counts.succeeded, counts.retried) == (1, 1)
    assert work_row(small, "state", "result") == ("succeeded", '"ok"')
    state, error = work_row(big, "state", "last_error")
    assert state == "pending" and '"code": "DS250"' in error
