"""The plain-value shortcuts of ``as_instant`` and ``as_duration`` (docs/benchmarks.md "Batched
Work, client Python") and the history detail encoder made once (``rows.dumps``): each gives what
the full path gives, and everything else still takes the full path with its refusals."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from durable_schedule.errors import InvalidArgument, WorkPrecisionError
from durable_schedule.evaluation.policy import as_duration, as_instant
from durable_schedule.work.rows import _json_default, dumps


class _Instant(datetime):
    pass


class _Span(timedelta):
    nanoseconds = 5


def _reference_instant(value: datetime) -> datetime:
    utc = value.astimezone(UTC)
    return datetime.combine(utc.date(), utc.time(), UTC)


@pytest.mark.parametrize("value", [
    datetime(2026, 12, 2, 5, 0, 1, 7, tzinfo=UTC),
    datetime(2026, 12, 2, 5, 0, tzinfo=UTC, fold=1),
    datetime(2026, 12, 2, 7, 0, tzinfo=timezone(timedelta(hours=2))),
    datetime(2026, 12, 2, 5, 0, tzinfo=ZoneInfo("UTC")),
    datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
    _Instant(2026, 12, 2, 5, 0, tzinfo=UTC),
])
def test_as_instant__the_full_path_answer_for_every_kind_of_aware_datetime(value):
    got = as_instant(value, "now")
    want = _reference_instant(value)
    assert got == want
    assert type(got) is datetime and got.tzinfo is UTC
    assert (got.fold, got.utcoffset()) == (want.fold, want.utcoffset())


@pytest.mark.parametrize("bad", [datetime(2026, 12, 2, 5, 0), "2026-12-02T05:00:00Z", None, 0])
def test_as_instant__refusals_unchanged(bad):
    with pytest.raises(InvalidArgument):
        as_instant(bad, "due_at", InvalidArgument)


def test_as_duration__plain_values_and_the_refused_ones():
    for value in (timedelta(seconds=30), timedelta(days=-1, microseconds=3), timedelta(0)):
        got = as_duration(value, "lease")
        assert got == value and type(got) is timedelta
    assert as_duration(5, "lease") == timedelta(microseconds=5)
    with pytest.raises(WorkPrecisionError):
        as_duration(_Span(seconds=1), "lease")  # a subclass with nanoseconds: full path
    with pytest.raises(WorkPrecisionError):
        as_duration(1.5, "lease")
    with pytest.raises(InvalidArgument):
        as_duration(True, "lease")


def test_rows_dumps__the_json_dumps_text_with_the_same_default():
    when = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)
    values = [
        {"to": "running", "from": "pending", "permit_no": 3, "slot_due_at": when,
         "lease_expires_at": when + timedelta(seconds=30)},
        {"b": [when, uuid.UUID(int=7), {"é": None}], "a": 1.5, "z": True},
        [], "text", None, {"nested": {"k": [1, 2, {"when": when}]}},
    ]
    for value in values:
        assert dumps(value) == json.dumps(value, sort_keys=True, default=_json_default)
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        dumps(loop)
    assert dumps({"after": when}) == json.dumps({"after": when.isoformat()})
