"""docs/work.md "Inspection": a Work whose stored policy snapshot cannot be read (changed by SQL)
is still shown by ``work.get`` and ``work.list``, with ``execution=None``, next to the scope's
other Work; the worker suspends it ``unevaluable_policy``. Before, both raised DS203, so the
operator could not inspect it and every ``list`` page holding it failed."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule import work
from tests.work.conftest import run_pass, work_row

pytestmark = pytest.mark.django_db


def test_inspection__a_tampered_policy_snapshot_does_not_hide_the_page(clock, define):
    d = define("t.tampered", policy=work.ExecutionPolicy(work.RetryPolicy()))
    d.executor(lambda ctx, payload: {"ok": True})
    tampered = d.enqueue(scope="tenant-a", command="a", idempotency_key="k", payload={}).work_id
    healthy = d.enqueue(scope="tenant-a", command="b", idempotency_key="k", payload={}).work_id
    with connection.cursor() as cur:
        cur.execute("update durable_work set retry_policy = '{\"max_attempts\": 99}'"
                    " where work_id = %s", [tampered])
    assert run_pass().suspended == 1
    assert work_row(tampered, "state", "suspension_reason") == (
        "suspended", "unevaluable_policy")

    info = work.get("tenant-a", tampered)
    assert info.execution is None and info.state == "suspended"
    assert info.fingerprint_schema.endswith(".v2")
    listed = work.list("tenant-a")
    assert [w.work_id for w in listed] == [tampered, healthy]
    assert listed[1].state == "succeeded" and listed[1].execution is not None
