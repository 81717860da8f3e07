"""Issue 3 item 4: claim, admission, permits, outcomes, guarded transitions, pass counts."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from durable_schedule import work
from durable_schedule.errors import InvalidArgument, InvalidLease, LeaseLost, SchemaBelowFloor
from durable_schedule.work import runtime
from tests.conftest import T0
from tests.work.conftest import (
    OWNER,
    count,
    dispatch,
    history,
    one,
    permits,
    run_pass,
    work_row,
)

pytestmark = pytest.mark.django_db
SECOND = timedelta(seconds=1)


def enqueue(definition, scope="tenant-a", key="k-1", **kwargs):
    return definition.enqueue(scope=scope, command="cmd-1", idempotency_key=key,
                              payload=kwargs.pop("payload", {"n": 1}), **kwargs)


def test_pass__an_empty_queue_gives_zero_counts(clock):
    assert run_pass().as_dict() == dict.fromkeys(runtime.WorkPassCounts().as_dict(), 0)


def test_pass__success_runs_the_executor_once_after_the_permit(clock, define):
    seen = []
    noop = define("t.success")

    @noop.executor
    def execute(ctx, payload):
        # The permit and the running state are committed before the executor runs.
        seen.append((ctx.work_id, ctx.attempt, ctx.permit_no, ctx.due_at, ctx.deadline,
                     permits(ctx.work_id), work_row(ctx.work_id, "state")[0]))
        return {"echo": payload}

    accepted = enqueue(noop)
    counts = run_pass()
    assert (counts.claimed, counts.admitted, counts.succeeded) == (1, 1, 1)
    assert seen == [(accepted.work_id, 1, 1, T0, None, [(1, 1, None, None)], "running")]
    state, result, attempt, finished = work_row(accepted.work_id, "state", "result", "attempt",
                                                "finished_at")
    assert (state, json.loads(result), attempt, finished) == (
        "succeeded", {"echo": {"n": 1}}, 1, T0)
    assert permits(accepted.work_id) == [(1, 1, "succeeded", "executor")]
    assert dispatch(accepted.work_id) is None
    assert history(accepted.work_id) == ["accepted", "admitted", "succeeded"]


def test_pass__work_not_yet_due_is_not_claimed(clock, define):
    calls = []
    later = define("t.later")
    later.executor(lambda ctx, payload: calls.append(1))
    accepted = enqueue(later, due_at=T0 + SECOND)
    assert run_pass().claimed == 0 and calls == []
    clock.advance(SECOND)
    assert run_pass().succeeded == 1 and calls == [1]
    assert work_row(accepted.work_id, "state") == ("succeeded",)


def test_admission__an_early_dispatch_row_never_runs_work_before_its_due_time(clock, define):
    calls = []
    d = define("t.early")
    d.executor(lambda ctx, payload: calls.append(1))
    accepted = enqueue(d, due_at=T0 + 5 * 60 * SECOND)
    with connection.cursor() as cur:  # a dispatch row due too early (drift, manual repair)
        cur.execute("update durable_work_dispatch set due_at = %s", [T0])
    counts = run_pass()
    assert (counts.claimed, counts.not_due, counts.admitted, calls) == (1, 1, 0, [])
    assert dispatch(accepted.work_id) == (T0 + 5 * 60 * SECOND, None)


def test_failure__legacy_work_retries_after_its_backoff(clock, define):
    attempts = []
    flaky = define("t.flaky")

    @flaky.executor
    def execute(ctx, payload):
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise ValueError("provider said no")
        return "ok"

    accepted = enqueue(flaky)
    assert run_pass().retried == 1
    state, due, error = work_row(accepted.work_id, "state", "due_at", "last_error")
    assert (state, due) == ("pending", T0 + 10 * SECOND)  # default initial delay 10 s
    assert json.loads(error)["code"] == "DS216" and json.loads(error)["type"] == "ValueError"
    assert dispatch(accepted.work_id) == (T0 + 10 * SECOND, None)
    assert permits(accepted.work_id) == [(1, 1, "failed", "executor")]
    clock.advance(9 * SECOND)
    assert run_pass().claimed == 0
    clock.advance(SECOND)
    assert run_pass().succeeded == 1 and attempts == [1, 2]


def test_failure__the_last_allowed_attempt_fails_the_work(clock, define):
    broken = define("t.broken", policy=work.ExecutionPolicy(work.RetryPolicy(
        maximum_attempts=2, initial_retry_delay=SECOND, maximum_retry_delay=SECOND)))

    @broken.executor
    def execute(ctx, payload):
        raise RuntimeError("always")

    accepted = enqueue(broken)
    run_pass()
    clock.advance(SECOND)
    counts = run_pass()
    assert counts.failed == 1
    assert work_row(accepted.work_id, "state", "execution_admission_closed_reason",
                    "execution_admission_closed_at") == ("failed", "attempts_exhausted",
                                                         T0 + SECOND)
    assert dispatch(accepted.work_id) is None


def test_outcome__a_lost_lease_quarantines_the_result_and_never_succeeds(clock, define):
    taken = define("t.taken")

    @taken.executor
    def execute(ctx, payload):
        if ctx.lease_owner == OWNER:
            # While this attempt runs, its lease expires and another worker takes the Work.
            clock.advance(2 * timedelta(minutes=1))
            assert run_pass(lease_owner="other-worker").recovered == 1
            return {"late": True}
        raise AssertionError("the takeover schedules a retry; it does not run yet")

    accepted = enqueue(taken)
    counts = run_pass()
    assert (counts.lost, counts.quarantined, counts.succeeded) == (1, 1, 0)
    reason, result, owner = one("select reason, result, lease_owner from durable_work_quarantine")
    assert (reason, json.loads(result), owner) == ("lease_lost", {"late": True}, OWNER)
    assert work_row(accepted.work_id, "state", "result") == ("pending", None)
    assert permits(accepted.work_id) == [(1, 1, None, None)]  # still ambiguous (idempotent)
    assert "result_quarantined" in history(accepted.work_id)


def test_outcome__a_lease_now_held_by_another_running_attempt_is_never_overwritten(clock,
                                                                                  define):
    seen = {}
    d = define("t.overtaken")

    @d.executor
    def execute(ctx, payload):
        with connection.cursor() as cur:  # factory: another worker now runs the Work
            cur.execute("update durable_work set lease_owner = 'other-worker',"
                        " lease_generation = lease_generation + 1")
        with pytest.raises(LeaseLost):
            ctx.renew()
        seen["cancelled"] = ctx.cancelled.is_set()
        return {"mine": True}

    accepted = enqueue(d)
    counts = run_pass()
    assert (counts.lost, counts.quarantined, counts.succeeded) == (1, 1, 0)
    assert seen == {"cancelled": True}
    assert work_row(accepted.work_id, "state", "lease_owner", "result") == (
        "running", "other-worker", None)
    assert permits(accepted.work_id) == [(1, 1, None, None)]
    assert one("select reason from durable_work_quarantine") == ("lease_lost",)


def test_admission__a_stale_claim_changes_nothing(clock, define):
    calls = []
    d = define("t.stale")
    d.executor(lambda ctx, payload: calls.append(ctx.lease_owner))
    accepted = enqueue(d)
    slow = runtime._Options("slow-worker", False, "default")
    claim = runtime._claim(slow, 30, 1)[0]
    clock.advance(31 * SECOND)  # the claim lease expired: another worker claims the row
    assert run_pass().succeeded == 1
    tally = Counter()
    assert runtime._admit(claim, slow, tally) is None and tally["skipped"] == 1
    assert calls == [OWNER] and work_row(accepted.work_id, "attempt") == (1,)


def test_admission__a_live_lease_of_another_worker_is_left_alone(clock, define):
    from tests.work.conftest import Crash

    d = define("t.busy")

    @d.executor
    def execute(ctx, payload):
        raise Crash

    accepted = enqueue(d)
    with pytest.raises(Crash):
        run_pass()
    with connection.cursor() as cur:  # a dispatch row due early (e.g. restored from a backup)
        cur.execute("update durable_work_dispatch set due_at = %s, lease_owner = null,"
                    " lease_expires_at = null", [T0])
    counts = run_pass()
    assert (counts.claimed, counts.busy, counts.admitted) == (1, 1, 0)
    assert dispatch(accepted.work_id) == (T0 + timedelta(minutes=1), OWNER)


def test_pass__stop_hands_back_claimed_rows_it_will_not_process(clock, define):
    done = []
    d = define("t.stop")
    d.executor(lambda ctx, payload: done.append(1))
    for i in range(3):
        enqueue(d, key=f"k-{i}")
    counts = run_pass(batch=3, stop=lambda: len(done) >= 1)
    assert (counts.claimed, counts.succeeded, counts.released) == (3, 1, 2)
    assert one("select count(*) from durable_work_dispatch where due_at = %s"
               " and lease_owner is null", [T0])[0] == 2


def test_pass__max_items_bounds_the_pass(clock, define):
    d = define("t.bounded")
    d.executor(lambda ctx, payload: None)
    for i in range(5):
        enqueue(d, key=f"k-{i}")
    assert run_pass(max_items=3, batch=2).succeeded == 3
    assert count("durable_work_dispatch") == 2


@pytest.mark.parametrize("kwargs, error", [
    ({"max_items": 0}, InvalidArgument),
    ({"batch": 1001}, InvalidArgument),
    ({"lease_owner": "bad\nowner"}, InvalidLease),
    ({"lease_owner": " "}, InvalidLease),
    ({"lease_seconds": 601}, InvalidLease),
    ({"lease_seconds": 0}, InvalidLease),
])
def test_pass__bad_arguments_are_refused_before_claiming(clock, define, kwargs, error):
    d = define("t.args")
    d.executor(lambda ctx, payload: None)
    enqueue(d)
    with pytest.raises(error):
        run_pass(**kwargs)
    assert dispatch(enqueue(d).work_id) == (T0, None)


def test_pass__refuses_to_run_below_the_schema_floor(clock):
    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = 1,"
                    " compatibility_floor = 1")
    with pytest.raises(SchemaBelowFloor):
        run_pass()


def test_executor__a_result_json_cannot_hold_is_a_failed_attempt(clock, define):
    d = define("t.badresult")
    d.executor(lambda ctx, payload: {"when": object()})
    accepted = enqueue(d)
    assert run_pass().retried == 1
    assert json.loads(work_row(accepted.work_id, "last_error")[0])["code"] == "DS209"


def test_executor__receives_the_payload_decoded_by_the_definitions_codec(clock, define):
    class Upper:
        def encode(self, value):
            return {"text": value.lower()}

        def decode(self, data):
            return data["text"].upper()

    seen = []
    d = define("t.codec", codec=Upper())
    d.executor(lambda ctx, payload: seen.append(payload))
    accepted = enqueue(d, payload="Hello")
    run_pass()
    assert seen == ["HELLO"]
    assert work.get("tenant-a", accepted.work_id).payload == {"text": "hello"}


def test_unknown_definition__suspends_and_keeps_the_work_until_resumed(clock, define):
    from durable_schedule.work.enqueue import WorkRequest

    accepted = work.enqueue("tenant-a", WorkRequest("c", "k", "t.later_deployed", "v1", {},
                                                    "idempotent"))
    counts = run_pass()
    assert (counts.suspended, counts.admitted) == (1, 0)
    state, reason, error, attempt = work_row(accepted.work_id, "state", "suspension_reason",
                                             "last_error", "attempt")
    assert (state, reason, attempt) == ("suspended", "unknown_definition", 0)
    assert json.loads(error)["code"] == "DS201"
    assert dispatch(accepted.work_id) is None and permits(accepted.work_id) == []
    d = define("t.later_deployed")
    d.executor(lambda ctx, payload: "done")
    assert work.resume("tenant-a", accepted.work_id, actor="ops@example") == "pending"
    assert run_pass().succeeded == 1
    assert one("select actor from durable_work_history where event = 'resumed'") == (
        "ops@example",)


def test_cancel__pending_work_is_canceled_and_leaves_the_queue(clock, define):
    from durable_schedule.errors import WorkStateConflict

    d = define("t.cancel")
    d.executor(lambda ctx, payload: None)
    accepted = enqueue(d)
    assert work.cancel("tenant-a", accepted.work_id, actor="ops") == "canceled"
    assert dispatch(accepted.work_id) is None and run_pass().claimed == 0
    assert work.cancel("tenant-a", accepted.work_id, actor="ops") == "canceled"
    done = enqueue(d, key="k-2")
    run_pass()
    with pytest.raises(WorkStateConflict):
        work.cancel("tenant-a", done.work_id, actor="ops")


@pytest.mark.django_db(transaction=True)
def test_admission__never_waits_for_a_work_row_locked_by_someone_else(committed_clock, define,
                                                                      pg_factory):
    calls = []
    d = define("t.locked")
    d.executor(lambda ctx, payload: calls.append(1))
    accepted = enqueue(d)
    holder = pg_factory()  # e.g. an operator command in progress
    holder.execute("select 1 from durable_work where work_id = %s for update",
                   [accepted.work_id])
    with connection.cursor() as cur:
        cur.execute("set statement_timeout = '5s'")  # a wait would fail the test, not hang it
    try:
        counts = run_pass(lease_seconds=30)
    finally:
        with connection.cursor() as cur:
            cur.execute("reset statement_timeout")
        holder.rollback()
    assert (counts.claimed, counts.skipped, calls) == (1, 1, [])
    committed_clock.advance(31 * SECOND)  # the lapsed claim makes the row claimable again
    assert run_pass().succeeded == 1 and calls == [1]


@pytest.mark.django_db(transaction=True)
def test_concurrency__workers_sharing_a_due_set_run_each_work_once(committed_clock, define):
    import threading

    from django.db import connections

    executed = []
    lock = threading.Lock()
    d = define("t.shared")

    @d.executor
    def execute(ctx, payload):
        with lock:
            executed.append(ctx.work_id)

    ids = {enqueue(d, key=f"k{i}").work_id for i in range(30)}
    errors = []

    def worker(name):
        try:
            run_pass(lease_owner=name, batch=3)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(executed, key=str) == sorted(ids, key=str)  # each exactly once
    assert one("select count(*) from durable_work where state = 'succeeded'") == (30,)
