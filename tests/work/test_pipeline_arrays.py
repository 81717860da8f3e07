"""The Work pipeline's set statements send their text and timestamp arrays in PostgreSQL's
binary format on the preparing cursor (store/arrays.py), and the same statements still run,
with the same values, on Django's own cursor (``PREPARE_STATEMENTS`` off)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.db import connection
from psycopg.adapt import PyFormat
from psycopg.types.array import ListBinaryDumper

from durable_schedule.store.arrays import BinaryArray
from durable_schedule.store.transactions import routed_batch
from tests.work.conftest import history, permits, run_pass, work_row

pytestmark = pytest.mark.django_db(transaction=True)

_AWKWARD = ['plain', None, 'quote " and backslash \\ and {braces}, commas', '', 'ünïcode']
_INSTANTS = [datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC), None,
             datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)]


def _round_trip(cur) -> tuple:
    cur.execute("select %(texts)s::text[], %(instants)s::timestamptz[]",
                {"texts": BinaryArray(_AWKWARD), "instants": BinaryArray(_INSTANTS)})
    return cur.fetchone()


def test_binary_array__is_dumped_in_binary_on_the_preparing_cursor(committed_clock):
    with routed_batch(claiming=False) as (cur, _enter):
        texts, instants = _round_trip(cur)
    assert texts == _AWKWARD and instants == _INSTANTS
    dumper = connection.connection.adapters.get_dumper(BinaryArray, PyFormat.AUTO)
    assert dumper is ListBinaryDumper


def test_binary_array__is_a_plain_text_list_on_djangos_cursor(committed_clock, settings):
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}),
                                 "PREPARE_STATEMENTS": False}
    with routed_batch(claiming=False) as (cur, _enter):
        assert _round_trip(cur) == (_AWKWARD, _INSTANTS)


@pytest.mark.parametrize("prepare", [True, False])
def test_pipeline__batch_admission_and_group_commit_on_either_cursor(committed_clock, define,
                                                                    settings, prepare):
    settings.DURABLE_SCHEDULE = {**getattr(settings, "DURABLE_SCHEDULE", {}),
                                 "PREPARE_STATEMENTS": prepare}
    d = define("test.arrays")
    d.executor(lambda ctx, payload: {"echo": payload["s"]})
    ids = [d.enqueue(scope="tenant-a", command=f"c-{i}", idempotency_key=f"k-{i}",
                     payload={"s": text}).work_id
           for i, text in enumerate(t for t in _AWKWARD if t is not None)]
    counts = run_pass(batch=len(ids))
    assert (counts.claimed, counts.admitted, counts.succeeded) == (len(ids),) * 3
    for work_id, text in zip(ids, (t for t in _AWKWARD if t is not None), strict=True):
        state, result = work_row(work_id, "state", "result")
        assert state == "succeeded"
        assert json.loads(result) == {"echo": text}
        assert permits(work_id) == [(1, 1, "succeeded", "executor")]
        assert history(work_id) == ["accepted", "admitted", "succeeded"]
