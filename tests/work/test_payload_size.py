"""docs/work.md "Accepting Work": a payload or result is at most ``codec.MAX_JSON_BYTES`` (32 MiB)
of canonical JSON, else ``PayloadTooLarge`` (DS250, a ``PayloadNotEncodable``) before anything is
written. Before, a value PostgreSQL cannot store as ``jsonb`` reached the database: ``enqueue``
failed the caller's transaction with a raw database error, and an executor's result failed the
whole batch's group commit, so every other outcome of the batch was lost with it (the pass
raised; their leases expired and the attempts ran again)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from durable_schedule import work
from durable_schedule.errors import PayloadNotEncodable, PayloadTooLarge
from durable_schedule.work import codec
from tests.work.conftest import count, one, run_pass, work_row

pytestmark = pytest.mark.django_db

#: One character more than PostgreSQL stores in a jsonb string (268,435,455 bytes).
BEYOND_JSONB = "x" * (2**28)
#: Just over the documented bound, far below what jsonb refuses.
OVER_BOUND = "y" * (codec.MAX_JSON_BYTES - len('{"a":""}') + 1)


@pytest.fixture
def touch(define):
    d = define("t.size")
    d.executor(lambda ctx, payload: BEYOND_JSONB if payload.get("big") else {"ok": True})
    return d


@pytest.mark.parametrize("text", [OVER_BOUND, BEYOND_JSONB], ids=["over-bound", "beyond-jsonb"])
def test_enqueue__a_too_large_payload_is_refused_before_anything_is_written(clock, touch, text):
    with transaction.atomic():
        with pytest.raises(PayloadTooLarge) as refused:
            touch.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                          payload={"a": text})
        # Refused in Python: the caller's transaction is still usable.
        with connection.cursor() as cur:
            cur.execute("select 1")
            assert cur.fetchone() == (1,)
    assert refused.value.code == "DS250" and isinstance(refused.value, PayloadNotEncodable)
    assert refused.value.context["limit"] == codec.MAX_JSON_BYTES
    assert count("durable_work") == 0


def test_enqueue__a_payload_at_the_bound_is_accepted(clock, touch):
    text = "z" * (codec.MAX_JSON_BYTES - len('{"a":""}'))
    accepted = touch.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                             payload={"a": text})
    assert accepted.created
    assert one("select octet_length(payload::text) from durable_work")[0] >= len(text)


def test_enqueue_many__a_too_large_item_is_refused_when_its_request_is_built(clock, touch):
    with pytest.raises(PayloadTooLarge):
        touch.request(command="b", idempotency_key="k", payload={"a": OVER_BOUND})
    with pytest.raises(PayloadTooLarge):
        work.WorkRequest(command_id="b", idempotency_key="k", work_name="t.size",
                         work_version="v1", payload={"a": OVER_BOUND},
                         provider_safety="idempotent")


def test_result__a_too_large_result_fails_its_attempt_and_the_batch_commits(clock, touch):
    big = touch.enqueue(scope="tenant-a", command="big", idempotency_key="k",
                        payload={"big": True}).work_id
    small = touch.enqueue(scope="tenant-a", command="small", idempotency_key="k",
                          payload={}).work_id
    counts = run_pass(batch=10)
    assert (counts.admitted, counts.succeeded, counts.retried) == (2, 1, 1)
    assert work_row(small, "state", "result") == ("succeeded", '{"ok": true}')
    state, error = work_row(big, "state", "last_error")
    assert state == "pending" and '"code": "DS250"' in error


def test_enqueue_many__payloads_over_the_bound_together_refuse_the_call(clock, touch):
    half = "h" * (codec.MAX_JSON_BYTES // 2)  # each payload alone is under the bound
    requests = [touch.request(command=f"c-{i}", idempotency_key="k", payload={"a": half})
                for i in range(2)]
    with pytest.raises(PayloadTooLarge) as refused:
        work.enqueue_many("tenant-a", requests)
    assert refused.value.context["requests"] == 2
    assert count("durable_work") == 0
    # The same identity twice in one call is one Work: it is counted once (and created by
    # its first position only, docs/work.md "Accepting Work").
    assert [a.created for a in work.enqueue_many("tenant-a", [requests[0], requests[0]])] == [
        True, False]
    assert count("durable_work") == 1


def test_enqueue_many__a_call_jsonb_cannot_hold_is_refused_before_it_is_sent(clock, touch):
    # Nine payloads of 30 MiB: each under the bound, together more than PostgreSQL stores in
    # the call's one jsonb parameter (before: a raw database error in the caller's transaction).
    text = "n" * (30 * 1024 * 1024)
    requests = [touch.request(command=f"c-{i}", idempotency_key="k", payload={"a": text})
                for i in range(9)]
    with transaction.atomic():
        with pytest.raises(PayloadTooLarge):
            work.enqueue_many("tenant-a", requests)
        with connection.cursor() as cur:
            cur.execute("select count(*) from durable_work")
            assert cur.fetchone() == (0,)
