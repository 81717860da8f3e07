"""Issue 12 item 5 / issue 15 item 3: an executor's exception is logged with its traceback and
ids, and every failed attempt keeps its class path and a bounded traceback, readable through
``work.attempts`` (and the latest one through ``work.get().last_error``)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from durable_schedule import work
from durable_schedule.errors import WorkNotFound
from durable_schedule.work.failures import MESSAGE_LIMIT, TRACEBACK_LIMIT, bounded_traceback
from tests.work.conftest import run_pass

pytestmark = pytest.mark.django_db


class ProviderDown(Exception):
    pass


def _call_provider(n: int):
    raise ProviderDown(f"provider down on call {n}")


def _accept(d) -> str:
    return d.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={}).work_id


def test_errors__failed_attempts_keep_class_path_and_traceback(clock, define):
    d = define("test.flaky")
    calls = []

    @d.executor
    def run(ctx, payload):
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            _call_provider(ctx.attempt)
        return {"ok": ctx.attempt}

    work_id = _accept(d)
    assert run_pass().retried == 1
    info = work.get("tenant-a", work_id)
    assert info.last_error["class"] == f"{__name__}.ProviderDown"
    assert info.last_error["code"] == "DS216"
    assert "_call_provider" in info.last_error["traceback"]
    assert "provider down on call 1" in info.last_error["traceback"]
    clock.advance(timedelta(seconds=10))
    assert run_pass().retried == 1
    clock.advance(timedelta(seconds=20))
    assert run_pass().succeeded == 1
    found = work.attempts("tenant-a", work_id)
    assert [(a.attempt, a.outcome, a.lease_owner) for a in found] == [
        (1, "failed", "test-worker"), (2, "failed", "test-worker"),
        (3, "succeeded", "test-worker")]
    first, second, third = found
    assert first.exception_class == second.exception_class == f"{__name__}.ProviderDown"
    assert "provider down on call 1" in first.traceback
    assert "provider down on call 2" in second.traceback
    assert first.failure_event == second.failure_event == "retry_scheduled"
    assert third.error is None and third.traceback is None


def test_errors__the_exception_is_logged_with_traceback_and_ids(clock, define, caplog):
    d = define("test.logged")
    d.executor(lambda ctx, payload: _call_provider(7))
    work_id = _accept(d)
    with caplog.at_level(logging.ERROR, logger="durable_schedule.work"):
        run_pass()
    [record] = [r for r in caplog.records if r.name == "durable_schedule.work"]
    assert record.levelno == logging.ERROR
    assert record.exc_info and record.exc_info[0] is ProviderDown
    text = record.getMessage()
    assert f"work_id={work_id}" in text and "scope=tenant-a" in text and "attempt=1" in text
    assert record.durable == {"scope": "tenant-a", "work_id": str(work_id), "attempt": 1,
                              "permit_no": 1, "work_name": "test.logged",
                              "work_version": "v1", "lease_owner": "test-worker"}
    assert "_call_provider" in caplog.text  # the formatted traceback


def test_errors__huge_messages_and_deep_stacks_are_bounded(clock, define):
    d = define("test.huge")

    def deep(n):
        if n == 0:
            raise ValueError("x" * 100_000)
        deep(n - 1)

    d.executor(lambda ctx, payload: deep(400))
    work_id = _accept(d)
    run_pass()
    error = work.get("tenant-a", work_id).last_error
    assert error["class"] == "builtins.ValueError"
    assert len(error["message"]) == MESSAGE_LIMIT
    assert len(error["traceback"]) <= TRACEBACK_LIMIT
    assert "characters cut" in error["traceback"]
    assert error["traceback"].startswith("Traceback (most recent call last):")
    assert work.attempts("tenant-a", work_id)[0].error == error


def test_errors__bounded_traceback_keeps_short_ones_whole():
    try:
        _call_provider(1)
    except ProviderDown as exc:
        text = bounded_traceback(exc)
    assert "characters cut" not in text and text.endswith("provider down on call 1\n")


def test_errors__a_user_code_attribute_is_not_taken_for_a_diagnostic_code(clock, define):
    class HttpError(Exception):
        code = 503

    d = define("test.http")
    d.executor(lambda ctx, payload: (_ for _ in ()).throw(HttpError("unavailable")))
    work_id = _accept(d)
    run_pass()
    assert work.get("tenant-a", work_id).last_error["code"] == "DS216"


def test_errors__attempts_are_scoped(clock, define):
    d = define("test.scoped_attempts")
    d.executor(lambda ctx, payload: {})
    work_id = _accept(d)
    assert work.attempts("tenant-a", work_id) == []
    with pytest.raises(WorkNotFound):
        work.attempts("tenant-b", work_id)
