"""A call that passes the scope and leaves a required argument out is told which argument is
missing. The optional-scope wrapper retried such a call with the arguments shifted one place
(reading the scope as the schedule id, the schedule id as the reason), and without a default
scope it then reported only DS410 "no scope": ``schedules.suspend(scope, id, actor=...)``
without its reason said nothing about the reason.

Every function the wrapper covers is called here with the scope first and its last required
argument left out. ``schedules.list`` and ``work.list`` have no required argument besides the
scope, so they cannot be called that way.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from durable_schedule import schedules, work
from durable_schedule.errors import ScopeRequired

pytestmark = pytest.mark.django_db
WORK_ID = "00000000-0000-0000-0000-000000000001"
START = datetime(2026, 1, 1, tzinfo=UTC)

CALLS = {
    "schedules.create": ("target", lambda: schedules.create("t", "s", schedules.Every(
        timedelta(hours=1)))),
    "schedules.update": ("expected_revision", lambda: schedules.update("t", "s")),
    "schedules.delete": ("schedule_id", lambda: schedules.delete("t")),
    "schedules.release_after_recovery": ("schedule_id",
                                         lambda: schedules.release_after_recovery("t")),
    "schedules.suspend": ("reason", lambda: schedules.suspend("t", "s", actor="ops")),
    "schedules.get": ("schedule_id", lambda: schedules.get("t")),
    "schedules.occurrences": ("schedule_id", lambda: schedules.occurrences("t")),
    "schedules.produced_work": ("schedule_id", lambda: schedules.produced_work("t")),
    "schedules.pause": ("schedule_id", lambda: schedules.pause("t")),
    "schedules.resume": ("schedule_id", lambda: schedules.resume("t")),
    "schedules.trigger": ("request_id", lambda: schedules.trigger("t", "s")),
    "schedules.backfill": ("request_id", lambda: schedules.backfill(
        "t", "s", START, START + timedelta(hours=1))),
    "work.record_proof": ("outcome", lambda: work.record_proof("t", WORK_ID, actor="ops")),
    "work.resume": ("actor", lambda: work.resume("t", WORK_ID)),
    "work.cancel": ("actor", lambda: work.cancel("t", WORK_ID)),
    "work.enqueue": ("request", lambda: work.enqueue("t")),
    "work.enqueue_many": ("requests", lambda: work.enqueue_many("t")),
    "work.get": ("work_id", lambda: work.get("t")),
    "work.attempts": ("work_id", lambda: work.attempts("t")),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_missing_argument__is_named_as_a_type_error_before_any_query(name, settings):
    settings.DURABLE_SCHEDULE = {}
    missing, call = CALLS[name]
    with CaptureQueriesContext(connection) as queries, pytest.raises(TypeError) as caught:
        call()
    message = str(caught.value)
    assert "missing" in message and f"'{missing}'" in message, message
    assert len(queries) == 0


def test_missing_argument__the_ambiguous_suspend_names_both_readings(settings):
    # suspend("t", "s", actor=...) is also a well-formed call that left the scope out; without
    # a default scope neither reading can run, and the error keeps DS410 and names the reason.
    settings.DURABLE_SCHEDULE = {}
    with pytest.raises(ScopeRequired) as caught:
        schedules.suspend("t", "s", actor="ops")
    assert caught.value.code == "DS410"
    assert "DEFAULT_SCOPE" in str(caught.value)
    assert "if 't' is the scope" in str(caught.value)
    assert "the call is missing a required argument: 'reason'" in str(caught.value)


def test_missing_argument__the_module_covers_every_wrapped_function():
    # A function newly wrapped by scope_optional must be added to CALLS (or to the docstring's
    # list of functions without a required argument besides the scope).
    wrapped = {f"{module_name}.{attr}"
               for module_name, module in (("schedules", schedules), ("work", work))
               for attr in module.__all__
               if getattr(getattr(getattr(module, attr), "__code__", None), "co_qualname", "")
               == "scope_optional.<locals>.wrapper"}
    assert wrapped - {"schedules.list", "work.list"} == set(CALLS)
