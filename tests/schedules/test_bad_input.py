"""docs/protocol/index.md "Quality bars": "Every bad input gets a clear error with a diagnostic code
and changes nothing": each bad input of the schedule API raises its typed error and leaves every
table as it was."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from durable_schedule import schedules
from durable_schedule.errors import DurableError, InvalidBounds
from durable_schedule.work.target import WorkTarget
from tests.schedules.conftest import HOUR, SCOPE, T0, create, rows

pytestmark = pytest.mark.django_db

TABLES = ("durable_schedule_scope", "durable_schedule_definition", "durable_schedule_generation",
          "durable_schedule_occurrence", "durable_schedule_dispatch", "durable_schedule_history",
          "durable_work")


def snapshot():
    state = {t: rows(f"select count(*) from {t}")[0][0] for t in TABLES}
    state["definitions"] = rows("select scope_id, schedule_id, state, revision, cursor_utc,"
                                " active_generation from durable_schedule_definition order by 1, 2")
    state["dispatch"] = rows("select schedule_id, due_at, lease_owner, dispatch_revision"
                             " from durable_schedule_dispatch order by 1")
    return state


def forced(spec, **fields):
    """A frozen spec whose fields were forced past its constructor's checks."""
    for name, value in fields.items():
        object.__setattr__(spec, name, value)
    return spec


class NotASpec:
    interval = HOUR


UNKNOWN = WorkTarget("schedules.test.unregistered", "v1", {}, "idempotent", None)


def bad_calls(target):
    every = schedules.Every(HOUR)
    return {
        # spec: unknown kind, non-positive interval/delay, naive datetimes
        "unknown kind (a string)": ("DS101", lambda: create("s", "every hour", target)),
        "unknown kind (an object)": ("DS101", lambda: create("s", NotASpec(), target)),
        "zero interval": ("DS102", lambda: create(
            "s", forced(schedules.Every(HOUR), interval=timedelta(0)), target)),
        "negative delay": ("DS102", lambda: create(
            "s", forced(schedules.After(HOUR), delay=-HOUR), target)),
        "interval not a timedelta": ("DS101", lambda: create(
            "s", forced(schedules.Every(HOUR), interval=3600), target)),
        "naive At": ("DS103", lambda: create(
            "s", forced(schedules.At(T0 + HOUR), when=datetime(2030, 1, 2)), target)),
        "naive anchor": ("DS103", lambda: create(
            "s", forced(schedules.Every(HOUR), anchor=datetime(2030, 1, 2)), target)),
        "At at the acceptance instant": ("DS117", lambda: create("s", schedules.At(T0), target)),
        "At before the acceptance instant": ("DS117", lambda: create(
            "s", schedules.At(T0 - timedelta(microseconds=1)), target)),
        # bounds (docs/schedules.md "Bounds and limits": naive datetimes are InvalidBounds)
        "naive start_at": ("DS148", lambda: create(
            "s", every, target, start_at=datetime(2030, 1, 2))),
        "naive end_at": ("DS148", lambda: create(
            "s", every, target, end_at=datetime(2030, 1, 2))),
        "naive end_at on update": ("DS148", lambda: schedules.update(
            SCOPE, "existing", expected_revision=1, end_at=datetime(2030, 1, 2))),
        "start_at after end_at": ("DS148", lambda: create(
            "s", every, target, start_at=T0 + 2 * HOUR, end_at=T0 + HOUR)),
        "max_runs zero": ("DS148", lambda: create("s", every, target, max_runs=0)),
        # target
        "unregistered Work": ("DS105", lambda: create("s", every, UNKNOWN)),
        "target not a WorkTarget": ("DS105", lambda: create("s", every, "billing.invoice")),
        # identifiers
        "empty schedule id": ("DS115", lambda: create("", every, target)),
        "padded schedule id": ("DS115", lambda: create(" s", every, target)),
        "control character in schedule id": ("DS115", lambda: create("a\nb", every, target)),
        "C1 control in schedule id": ("DS115", lambda: create("a\x85b", every, target)),
        "201-character schedule id": ("DS115", lambda: create("x" * 201, every, target)),
        "schedule id not a string": ("DS115", lambda: create(7, every, target)),
        "empty scope": ("DS301", lambda: schedules.create("", "s", every, target)),
        "scope with a control character": ("DS301", lambda: schedules.create(
            "t\x00", "s", every, target)),
        # policies and windows
        "unknown overlap": ("DS111", lambda: create("s", every, target, overlap="allow")),
        "unknown misfire": ("DS111", lambda: create("s", every, target, misfire="catch_up")),
        "zero safety window": ("DS102", lambda: create(
            "s", every, target, safety_window=timedelta(0))),
        "safety window not a timedelta": ("DS406", lambda: create(
            "s", every, target, safety_window=3600)),
        "actor not a string": ("DS406", lambda: create("s", every, target, actor=7)),
        "actor with a control character": ("DS406", lambda: create(
            "s", every, target, actor="a\tb")),
        # existing schedules: revision, lifecycle, unknown identity
        "stale revision": ("DS106", lambda: schedules.update(
            SCOPE, "existing", expected_revision=9, spec=every)),
        "revision not an int": ("DS406", lambda: schedules.update(
            SCOPE, "existing", expected_revision="1")),
        "revision True": ("DS406", lambda: schedules.update(
            SCOPE, "existing", expected_revision=True)),
        "update of an unknown schedule": ("DS108", lambda: schedules.update(
            SCOPE, "unknown", expected_revision=1)),
        # docs/schedules.md "The API": arguments are validated before the database is touched,
        # so a bad one is named even when the schedule does not exist.
        "update with max_runs zero": ("DS148", lambda: schedules.update(
            SCOPE, "unknown", expected_revision=1, max_runs=0)),
        "update with a naive start_at": ("DS148", lambda: schedules.update(
            SCOPE, "unknown", expected_revision=1, start_at=datetime(2030, 1, 2))),
        "update with start_at after end_at": ("DS148", lambda: schedules.update(
            SCOPE, "unknown", expected_revision=1, start_at=T0 + 2 * HOUR, end_at=T0 + HOUR)),
        "update with a jitter that is no timedelta": ("DS149", lambda: schedules.update(
            SCOPE, "unknown", expected_revision=1, jitter=60)),
        "update with a negative jitter": ("DS149", lambda: schedules.update(
            SCOPE, "unknown", expected_revision=1, jitter=-HOUR)),
        "update after delete": ("DS107", lambda: schedules.update(
            SCOPE, "deleted", expected_revision=2, spec=every)),
        "update to a past At": ("DS117", lambda: schedules.update(
            SCOPE, "existing", expected_revision=1, spec=schedules.At(T0 - HOUR))),
        "update with an unregistered target": ("DS105", lambda: schedules.update(
            SCOPE, "existing", expected_revision=1, target=UNKNOWN)),
        "delete with a stale revision": ("DS106", lambda: schedules.delete(
            SCOPE, "existing", expected_revision=5)),
        "release of an active schedule": ("DS116", lambda: schedules.release_after_recovery(
            SCOPE, "existing")),
        "blank suspension reason": ("DS406", lambda: schedules.suspend(
            SCOPE, "existing", "  ", "ops")),
        "list with a bad limit": ("DS406", lambda: schedules.list(SCOPE, limit=0)),
        "list with an unknown state": ("DS406", lambda: schedules.list(SCOPE, states=["x"])),
        "list with states not iterable": ("DS406", lambda: schedules.list(SCOPE, states=5)),
        "list with an unhashable state": ("DS406", lambda: schedules.list(
            SCOPE, states=[["active"]])),
        "get of an unknown schedule": ("DS108", lambda: schedules.get(SCOPE, "unknown")),
    }


CASES = sorted(bad_calls(None))


@pytest.mark.parametrize("case", CASES)
def test_bad_input__raises_its_typed_error_and_writes_nothing(clock, target, case):
    create("existing", schedules.Every(HOUR), target)
    create("deleted", schedules.Every(HOUR), target)
    schedules.delete(SCOPE, "deleted")
    code, call = bad_calls(target)[case]
    before = snapshot()
    with pytest.raises(DurableError) as err:
        call()
    assert err.value.code == code, str(err.value)
    assert err.value.next_action in str(err.value)
    assert snapshot() == before
    if code == "DS148":
        assert isinstance(err.value, InvalidBounds)


def test_bad_input__spec_constructors_refuse_bad_fields_at_once():
    with pytest.raises(DurableError) as err:
        schedules.Every(timedelta(0))
    assert err.value.code == "DS102"
    with pytest.raises(DurableError) as err:
        schedules.At(datetime(2030, 1, 1))
    assert err.value.code == "DS103"
    with pytest.raises(DurableError) as err:
        schedules.After(timedelta(seconds=-1))
    assert err.value.code == "DS102"


@pytest.mark.parametrize("call", [
    lambda target: create("s", schedules.Every(HOUR), target, jitter="1 minute"),
    lambda target: create("s", schedules.Every(HOUR), target, jitter=timedelta(0)),
    lambda target: create("s", schedules.Every(HOUR), target, start_at=datetime(2030, 1, 2)),
    lambda target: schedules.update(SCOPE, "s", expected_revision=1, jitter=-HOUR),
    lambda target: schedules.update(SCOPE, "s", expected_revision=1, max_runs=True),
], ids=["create jitter text", "create zero jitter", "create naive start_at",
        "update negative jitter", "update max_runs True"])
def test_bad_arguments_are_refused_before_any_statement(clock, target, call,
                                                        django_assert_num_queries):
    """docs/schedules.md "The API": every function validates its arguments before it touches
    the database; a value that is wrong on its own sends no statement at all."""
    with django_assert_num_queries(0), pytest.raises(DurableError):
        call(target)
