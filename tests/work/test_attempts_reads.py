"""Reads of a Work's attempts follow the rules of every other read: they write nothing (so they
run in a read-only transaction, e.g. on a standby or as a reporting connection) and they take
the DEFAULT_SCOPE like every other public call whose first argument is a scope
(docs/security.md "Reads never create scopes", docs/getting-started.md "One scope")."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection, transaction

from durable_schedule import work
from durable_schedule.errors import ScopeRequired, WorkNotFound
from tests.work.conftest import run_pass

pytestmark = pytest.mark.django_db


def _accept(d, scope: str = "tenant-a"):
    return d.enqueue(scope=scope, command="c", idempotency_key="k", payload={}).work_id


def _read_only():
    """A savepoint whose transaction may no longer write (as on a hot standby)."""
    block = transaction.atomic()
    block.__enter__()
    with connection.cursor() as cur:
        cur.execute("set transaction read only")
    return block


def test_attempts__run_in_a_read_only_transaction_like_the_other_reads(clock, define):
    d = define("test.read_only_attempts")
    d.executor(lambda ctx, payload: {})
    work_id = _accept(d)
    run_pass()
    block = _read_only()
    try:
        assert work.get("tenant-a", work_id).state == "succeeded"
        # Before: the attempts read entered its scope with the writing entry, whose INSERT of
        # the scope row a read-only transaction refuses ("cannot execute INSERT ...").
        found = work.attempts("tenant-a", work_id)
        assert [a.outcome for a in found] == ["succeeded"]
        with pytest.raises(WorkNotFound):
            work.attempts("never-written", uuid.uuid4())
    finally:
        block.__exit__(None, None, None)


def test_attempts__of_another_scope_are_not_found_like_a_missing_work(clock, define):
    d = define("test.attempts_other_scope")
    d.executor(lambda ctx, payload: {})
    work_id = _accept(d, "tenant-a")
    run_pass()
    assert len(work.attempts("tenant-a", work_id)) == 1
    for scope in ("tenant-b", "never-written"):
        with pytest.raises(WorkNotFound) as other:
            work.attempts(scope, work_id)
        with pytest.raises(WorkNotFound) as missing:
            work.attempts(scope, uuid.uuid4())
        assert other.value.code == missing.value.code == "DS210"


def test_attempts__take_the_default_scope(clock, define, settings):
    d = define("test.default_scope_attempts")
    d.executor(lambda ctx, payload: {})
    work_id = _accept(d, "main")
    run_pass()
    settings.DURABLE_SCHEDULE = {"DEFAULT_SCOPE": "main"}
    assert [a.attempt for a in work.attempts(work_id)] == [1]
    assert [a.attempt for a in work.attempts(work_id=work_id)] == [1]
    assert [a.attempt for a in work.attempts(None, work_id)] == [1]
    assert len(work.attempts("main", work_id)) == 1


def test_attempts__without_a_default_scope_a_missing_scope_is_ds410(clock, settings):
    settings.DURABLE_SCHEDULE = {}
    with pytest.raises(ScopeRequired):
        work.attempts(uuid.uuid4())
