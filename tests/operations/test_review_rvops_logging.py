"""Review rvops: ``JsonFormatter`` writes one line of strict JSON per record whatever the record
carries (docs/operations.md "Logging": one JSON object per line), and an extra field never
replaces the line's own time, level, logger or message."""

from __future__ import annotations

import json
import logging

import pytest

from durable_schedule.observability import logs


def record(message: str = "executor failed: %s", args=("x",), **extra) -> logging.LogRecord:
    rec = logging.LogRecord("durable_schedule.work", logging.ERROR, __file__, 1, message, args,
                            None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def strict(line: str) -> dict:
    def refuse(token):
        raise AssertionError(f"not JSON: {token}")

    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize("text", ["a\u2028b", "a\u2029b", "a\x85b", "a\r\nb\x0bc\x1ed"])
def test_a_value_with_a_line_break_json_does_not_escape_stays_on_one_line(text):
    line = logs.JsonFormatter().format(record(args=(text,), detail=text))
    assert len(line.splitlines()) == 1, line
    data = strict(line)
    assert data["message"] == f"executor failed: {text}" and data["detail"] == text


def test_values_strict_json_cannot_hold_are_written_as_text():
    loop: list = []
    loop.append(loop)
    line = logs.JsonFormatter().format(record(lag=float("nan"), late=float("inf"),
                                              counts={("work", "live"): 1}, loop=loop))
    assert len(line.splitlines()) == 1
    data = strict(line)
    assert (data["lag"], data["late"]) == ("nan", "inf")
    assert data["counts"] == {"('work', 'live')": 1}
    assert data["message"] == "executor failed: x"


def test_an_extra_named_like_a_field_of_the_line_does_not_replace_it():
    data = strict(logs.JsonFormatter().format(record(level="debug", time="yesterday",
                                                     logger="other")))
    assert (data["level"], data["logger"]) == ("ERROR", "durable_schedule.work")
    assert data["time"].endswith("+00:00")
    assert (data["extra_level"], data["extra_time"], data["extra_logger"]) == (
        "debug", "yesterday", "other")
