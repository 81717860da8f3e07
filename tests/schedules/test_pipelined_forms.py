"""The transaction forms that send their first statements with the role switch or the scope
entry in one psycopg pipeline (store/transactions.py ``routed_pipelined`` and
``dispatcher_transaction(first=...)``): the statements run after the entry, see exactly the
entered scope, and a routing id that names no scope, a refused entry or a failing statement
leave nothing behind."""

from __future__ import annotations

import pytest
from django.db import DatabaseError

from durable_schedule import schedules
from durable_schedule.errors import WrongRole
from durable_schedule.processor.batch_work import batch_statement
from durable_schedule.store import transactions
from durable_schedule.store.transactions import dispatcher_transaction, routed_pipelined
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    create,
    dispatch,
    leave_transaction_forms,
    rows,
)

pytestmark = pytest.mark.django_db

SCOPE_AND_USER = ("select current_setting('durable_schedule.scope_id', true), current_user", {})


def routing_id(scope: str = SCOPE) -> int:
    return rows("select routing_id from durable_schedule_scope where scope_id = %s",
                (scope,))[0][0]


def enter(rid: int, statements):
    try:
        with routed_pipelined(rid, statements) as (_cur, scope_id, got):
            return scope_id, got
    finally:
        leave_transaction_forms()


@pytest.mark.parametrize("pipelined", [True, False])
def test_routed_pipelined__statements_run_inside_the_entered_scope(clock, target, monkeypatch,
                                                                   pipelined):
    if not pipelined:  # Django's own cursor: the statements run one after the other
        monkeypatch.setattr(transactions, "pipeline_connection", lambda cur: None)
    create("s", schedules.Every(HOUR), target)
    create("s", schedules.Every(HOUR), target, scope="tenant-other")
    scope_id, (seen, fences) = enter(routing_id(), [
        SCOPE_AND_USER, (batch_statement("lock_fences_in_scope"), {})])
    assert scope_id == SCOPE
    assert seen == [(SCOPE, "durable_runtime")]
    assert len(fences) == 1 and fences[0][4] == routing_id()  # this scope's row, no other


def test_routed_pipelined__a_routing_id_naming_no_scope_sees_no_scope(clock, target):
    create("s", schedules.Every(HOUR), target)
    scope_id, (fences,) = enter(10**12, [(batch_statement("lock_fences_in_scope"), {})])
    assert (scope_id, fences) == (None, [])


def test_routed_pipelined__a_failing_statement_raises_and_the_entry_is_rolled_back(
        clock, target):
    create("s", schedules.Every(HOUR), target)
    with pytest.raises(DatabaseError):
        enter(routing_id(), [("select 1 / 0", {})])
    assert rows("select current_setting('durable_schedule.scope_id', true)") in ([("",)],
                                                                                 [(None,)])


def test_dispatcher_transaction__the_first_statement_runs_as_the_dispatcher(clock, target):
    create("s", schedules.Every(HOUR), target)
    try:
        with dispatcher_transaction(first=SCOPE_AND_USER) as cur:
            [(scope, user)] = cur.fetchall()
        assert (scope or None, user) == (None, "durable_dispatcher")
    finally:
        leave_transaction_forms()
    assert dispatch("s")[1] is None  # nothing claimed


def test_dispatcher_transaction__a_role_switch_that_does_not_take_is_refused(
        clock, target, monkeypatch):
    # The proof is read after the pipelined statement ran: a switch to another role than the
    # dispatcher's raises WrongRole and the transaction rolls back.
    monkeypatch.setattr(transactions, "_ENTER_DISPATCHER",
                        "select set_config('role', 'durable_runtime', true OR %s::text IS NULL)")
    with pytest.raises(WrongRole):
        try:
            with dispatcher_transaction(first=SCOPE_AND_USER):
                pass
        finally:
            leave_transaction_forms()
