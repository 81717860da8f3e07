"""A server restart (or failover, or restarted pooler) cuts every connection of a worker at
once, the idle connections of its ``--concurrency`` slot threads too. Once the runner has found
one of its own connections cut and retried (or ridden out) the loss, each slot thread checks its
connections before its next job and replaces the dead ones. Before, with Django's default
``CONN_HEALTH_CHECKS: False``, each slot's next attempt failed on its dead connection although
the loss was already known, and its retry then waited for the retry policy's backoff (seen with
``pg_ctl restart`` under a running loop: items delayed by tens of seconds)."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connections

from durable_schedule.runner.retry import run_with_retry
from durable_schedule.work import concurrency
from durable_schedule.work.broken_connections import drop_broken_connections
from tests.runner.loophelpers import backend_pid, run_on, sql

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pool_without_health_checks():
    settings = connections["default"].settings_dict
    old = settings["CONN_HEALTH_CHECKS"]
    settings["CONN_HEALTH_CHECKS"] = False  # Django's default
    pool = concurrency._Pool(1)
    try:
        yield pool
    finally:
        pool.shutdown()
        settings["CONN_HEALTH_CHECKS"] = old


def test_slot__after_the_runner_retried_a_connection_loss_its_dead_connection_is_replaced(
    pool_without_health_checks,
):
    pool = pool_without_health_checks
    kind, slot_pid = run_on(pool, backend_pid)
    assert kind == "ok", slot_pid
    main_pid = backend_pid()
    # The server cuts both: the slot's idle connection and the pipeline's.
    assert sql("select pg_terminate_backend(%s)", (slot_pid,)) == [(True,)]
    assert sql("select pg_terminate_backend(%s)", (main_pid,)) == [(True,)]
    calls = []

    def pipeline_step():
        calls.append(1)
        return backend_pid()

    new_main = run_with_retry("work.outcome", pipeline_step, sleep=lambda _s: None)
    assert (len(calls), new_main != main_pid) == (2, True)  # the loss was met and retried
    kind, value = run_on(pool, backend_pid)
    assert kind == "ok", f"the slot's next job failed on its dead connection: {value!r}"
    assert value != slot_pid
    # Once per loss: the next job keeps the healthy new connection.
    assert run_on(pool, backend_pid) == ("ok", value)


def test_slot__after_another_slot_dropped_a_dead_connection_its_own_is_replaced(
    pool_without_health_checks,
):
    # This (the test's) thread plays the slot whose attempt met the cut first: its failed
    # attempt drops the dead connection, which tells the other slots to check theirs.
    pool = pool_without_health_checks
    kind, slot_pid = run_on(pool, backend_pid)
    assert kind == "ok", slot_pid
    first_pid = backend_pid()
    assert sql("select pg_terminate_backend(%s)", (slot_pid,)) == [(True,)]
    assert sql("select pg_terminate_backend(%s)", (first_pid,)) == [(True,)]
    with pytest.raises(OperationalError):
        backend_pid()  # the first slot's attempt fails on the cut
    drop_broken_connections()
    assert backend_pid() != first_pid
    kind, value = run_on(pool, backend_pid)
    assert kind == "ok", f"the slot's next job failed on its dead connection: {value!r}"
    assert value != slot_pid


def test_slot__without_a_noted_loss_a_cut_connection_still_shows_in_the_next_job(
    pool_without_health_checks,
):
    # Unchanged, as documented: no check (no round trip) before jobs while nothing was lost;
    # the cut shows in the job, which then drops the connection (one failed attempt).
    pool = pool_without_health_checks
    kind, slot_pid = run_on(pool, backend_pid)
    assert kind == "ok", slot_pid
    assert sql("select pg_terminate_backend(%s)", (slot_pid,)) == [(True,)]
    kind, value = run_on(pool, backend_pid)
    assert kind == "error", value
