"""Row-level security through the Work API: the runtime functions never see another scope's
Work, and their writes land in the claimed row's own scope."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from durable_schedule import work
from durable_schedule.errors import WorkNotFound
from durable_schedule.store.transactions import scoped
from durable_schedule.work.enqueue import WorkRequest, accept_in_scope
from tests.pgroles import RUNTIME, become
from tests.work.conftest import rows, run_pass

pytestmark = pytest.mark.django_db


def request(**changes) -> WorkRequest:
    fields = dict(command_id="c", idempotency_key="k", work_name="t.rls", work_version="v1",
                  payload={}, provider_safety="idempotent")
    return WorkRequest(**{**fields, **changes})


@pytest.fixture
def two_scopes(clock, define):
    d = define("t.rls")
    d.executor(lambda ctx, payload: {"scope": ctx.scope})
    a = work.enqueue("tenant-a", request()).work_id
    b = work.enqueue("tenant-b", request()).work_id
    return a, b


def test_rls__get_list_cancel_and_proof_never_see_another_scope(two_scopes):
    a, b = two_scopes
    with pytest.raises(WorkNotFound):
        work.get("tenant-b", a)
    assert [i.work_id for i in work.list("tenant-b")] == [b]
    for command in (lambda: work.cancel("tenant-b", a, actor="x"),
                    lambda: work.resume("tenant-b", a, actor="x"),
                    lambda: work.record_proof("tenant-b", a, "applied", actor="x")):
        with pytest.raises(WorkNotFound):
            command()
    assert work.get("tenant-a", a).state == "pending"


def test_rls__a_deterministic_work_id_is_unique_per_scope_not_globally(clock):
    wid = uuid.uuid5(uuid.NAMESPACE_URL, "schedule/occurrence/1")
    for scope in ("tenant-a", "tenant-b"):
        with scoped(scope) as cur:
            assert accept_in_scope(cur, scope, request(work_id=wid)).created


def test_rls__the_runtime_writes_each_claimed_row_in_its_own_scope(two_scopes):
    a, b = two_scopes
    assert run_pass().succeeded == 2
    for table in ("durable_work_permit", "durable_work_history"):
        found = rows(f"select work_id, scope_id from {table} group by 1, 2")
        assert sorted(found, key=str) == sorted([(a, "tenant-a"), (b, "tenant-b")], key=str)
    results = rows("select scope_id, result::text from durable_work order by scope_id")
    assert results == [("tenant-a", '{"scope": "tenant-a"}'), ("tenant-b", '{"scope": "tenant-b"}')]


def test_rls__the_runtime_role_reads_only_the_scope_it_set(two_scopes):
    with connection.cursor() as cur:
        become(cur, RUNTIME, "tenant-b")
        cur.execute("select work_id from durable_work")
        visible = cur.fetchall()
        cur.execute("select count(*) from durable_work_dispatch")
        dispatch_rows = cur.fetchone()[0]
        cur.execute("reset role")
    assert (visible, dispatch_rows) == ([(two_scopes[1],)], 1)
