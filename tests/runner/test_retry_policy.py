"""docs/protocol/runner.md rules R1-R3 / docs/protocol/runner.md: the transient-error retry is
pinned: 3 retries, 250 ms -> 500 ms -> 1 s, then RetriesExhausted naming the phase; permission and
validation errors are never retried."""

from __future__ import annotations

import pytest
from django.db import OperationalError, ProgrammingError

from durable_schedule.errors import (
    InvalidScheduleSpec,
    RetriesExhausted,
    TransientDatabaseError,
    WrongRole,
)
from durable_schedule.runner import retry

pytestmark = pytest.mark.django_db  # the retry resets broken connections between attempts


class _Inner(Exception):
    def __init__(self, state):
        super().__init__(state)
        self.sqlstate = state


def django_error(cls, state):
    outer = cls(f"simulated {state}")
    outer.__cause__ = _Inner(state)
    return outer


def test_retry__constants_are_pinned():
    assert retry.RETRIES == 3
    assert retry.BACKOFF == (0.25, 0.5, 1.0)


def test_retry__sleeps_the_pinned_backoff_then_raises_with_the_phase():
    sleeps: list[float] = []
    calls = []

    def always_fails():
        calls.append(1)
        raise django_error(OperationalError, "57P01")

    with pytest.raises(RetriesExhausted) as info:
        retry.run_with_retry("schedule.pass", always_fails, identity={"scope_id": "t"},
                             sleep=sleeps.append)
    assert len(calls) == 4
    assert sleeps == [0.25, 0.5, 1.0]
    err = info.value
    assert err.code == "DS405"
    assert err.context["phase"] == "schedule.pass" and err.context["scope_id"] == "t"
    assert "schedule.pass" in str(err)
    assert isinstance(err.__cause__, OperationalError)


def test_retry__a_transient_error_followed_by_success_returns_the_result():
    sleeps: list[float] = []
    outcomes = [django_error(OperationalError, "40001"), django_error(OperationalError, "40P01")]

    def flaky():
        if outcomes:
            raise outcomes.pop(0)
        return "done"

    assert retry.run_with_retry("p", flaky, sleep=sleeps.append) == "done"
    assert sleeps == [0.25, 0.5]


@pytest.mark.parametrize(
    "exc",
    [
        django_error(ProgrammingError, "42501"),  # insufficient_privilege
        WrongRole("not the runtime role"),
        InvalidScheduleSpec("bad"),
        ValueError("a bug"),
    ],
)
def test_retry__permission_role_and_validation_errors_are_never_retried(exc):
    sleeps: list[float] = []

    def fails():
        raise exc

    with pytest.raises(type(exc)):
        retry.run_with_retry("p", fails, sleep=sleeps.append)
    assert sleeps == []


@pytest.mark.parametrize("state", ["40001", "40P01", "55P03", "57014", "57P01", "08006",
                                   "08P01"])
def test_retry__classifies_transient_sqlstates(state):
    assert retry.is_transient(django_error(OperationalError, state))


def test_retry__classifies_a_dropped_connection_without_sqlstate_as_transient():
    assert retry.is_transient(OperationalError("server closed the connection unexpectedly"))
    assert retry.is_transient(TransientDatabaseError("x"))


def test_retry__a_client_side_protocol_error_without_sqlstate_is_transient():
    # What psycopg reports when PgBouncer's server connection is terminated during COMMIT.
    from django.db import InternalError

    assert retry.is_transient(InternalError("received 2 results from command 'COMMIT'"))
    # A server-side internal error carries SQLSTATE XX000 and is not retried.
    assert not retry.is_transient(django_error(InternalError, "XX000"))
