"""Issue 12 item 5 (this helper's part): the JSON log formatter and the one-line stop summary,
written once (logged when a handler takes it, else printed)."""

from __future__ import annotations

import json
import logging
from io import StringIO

import pytest

from durable_schedule.observability import logs
from durable_schedule.runner.loop import LoopStats, StopFlag
from durable_schedule.runner.service import serve

pytestmark = pytest.mark.django_db


def test_json_formatter__one_line_with_extras_and_traceback():
    record = logging.LogRecord("durable_schedule.work", logging.ERROR, __file__, 1,
                               "executor of %s failed", ("w-1",), None)
    try:
        raise RuntimeError("provider down\nsecond line")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    record.scope_id, record.work_id, record.attempt = "tenant-a", "w-1", 2
    line = logs.JsonFormatter().format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert data["message"] == "executor of w-1 failed"
    assert (data["level"], data["logger"]) == ("ERROR", "durable_schedule.work")
    assert (data["scope_id"], data["work_id"], data["attempt"]) == ("tenant-a", "w-1", 2)
    assert data["exc_type"] == "RuntimeError"
    assert "Traceback (most recent call last)" in data["exc"] and "second line" in data["exc"]
    assert data["time"].endswith("+00:00")


def test_stop_summary__one_line_without_zero_counts():
    stats = LoopStats(passes=12, busy_passes=3, totals={"claimed": 4, "succeeded": 4, "failed": 0})
    assert logs.stop_summary("work", stats) == (
        "work runner stopped after 12 passes (3 busy): claimed=4 succeeded=4")


@pytest.fixture
def runner_logger():
    logger = logging.getLogger("durable_schedule.runner")
    level, propagate = logger.level, logger.propagate
    yield logger
    logger.setLevel(level)
    logger.propagate = propagate


def _serve_one_pass() -> LoopStats:
    return serve("work", lambda stop: {"claimed": 0}, stop=StopFlag(), max_passes=1,
                 install_signals=False, lease_owner="log-test:1")


def test_stop_summary__printed_when_no_handler_takes_the_log(clock, runner_logger):
    runner_logger.propagate = False  # no handler anywhere: the log line would be lost
    stats = _serve_one_pass()
    out = StringIO()
    logs.print_stop_summary(out, "work", stats, verbosity=1)
    assert out.getvalue() == "work runner stopped after 1 passes (0 busy): nothing done"


def test_stop_summary__logged_once_and_not_printed_when_a_handler_takes_it(clock, runner_logger):
    stream = StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    runner_logger.addHandler(handler)
    runner_logger.setLevel(logging.INFO)
    try:
        stats = _serve_one_pass()
        out = StringIO()
        logs.print_stop_summary(out, "work", stats, verbosity=1)
    finally:
        runner_logger.removeHandler(handler)
    assert out.getvalue() == ""
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    stops = [r for r in lines if "runner stopped" in r["message"]]
    assert [r["message"] for r in stops] == [
        "work runner stopped after 1 passes (0 busy): nothing done"]
    assert stops[0]["runner"] == "work" and stops[0]["passes"] == 1


def test_stop_summary__verbosity_zero_prints_nothing(runner_logger):
    runner_logger.propagate = False
    out = StringIO()
    logs.print_stop_summary(out, "work", LoopStats(passes=1), verbosity=0)
    assert out.getvalue() == ""
