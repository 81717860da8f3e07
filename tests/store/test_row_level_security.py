"""docs/protocol/storage.md / issue 2: every scoped table admits only the transaction-local scope,
for the real non-superuser runtime role (superusers and owners skip RLS, so we SET ROLE)."""

from __future__ import annotations

import pytest

from tests.pgroles import RUNTIME, become, refused
from tests.store.seed import SCOPED_TABLES, seed_scope

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_scopes(pg):
    with pg.cursor() as cur:
        a = seed_scope(cur, "tenant-a")
        b = seed_scope(cur, "tenant-b")
    return pg, a, b


@pytest.mark.parametrize("table", SCOPED_TABLES)
def test_rls__no_scope_setting_admits_nothing(two_scopes, table):
    pg, _, _ = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME)
    cur.execute(f"select count(*) from {table}")
    assert cur.fetchone()[0] == 0


@pytest.mark.parametrize("table", SCOPED_TABLES)
def test_rls__empty_scope_setting_from_an_earlier_transaction_admits_nothing(pg, table):
    cur = pg.cursor()
    # After a transaction set the setting locally, current_setting(name, true) returns '' in
    # later transactions of the session: the policy must treat '' as unset.
    pg.rollback()
    cur.execute("select set_config('durable_schedule.scope_id', 'tenant-a', true)")
    pg.commit()
    seed_scope(cur, "tenant-a")
    seed_scope(cur, "tenant-b")
    become(cur, RUNTIME)
    cur.execute("select current_setting('durable_schedule.scope_id', true)")
    assert cur.fetchone()[0] == ""
    cur.execute(f"select count(*) from {table}")
    assert cur.fetchone()[0] == 0


@pytest.mark.parametrize("table", SCOPED_TABLES)
def test_rls__scope_a_reads_only_its_own_rows(two_scopes, table):
    pg, _, _ = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME, "tenant-a")
    cur.execute(f"select distinct scope_id from {table}")
    assert [r[0] for r in cur.fetchall()] == ["tenant-a"]


UPDATABLE = {
    "durable_schedule_scope": "updated_at = now()",
    "durable_schedule_definition": "updated_at = now()",
    "durable_schedule_occurrence": "updated_at = now()",
    "durable_work": "updated_at = now()",
    "durable_work_permit": "resolved_by = resolved_by",
}


@pytest.mark.parametrize("table", sorted(UPDATABLE))
def test_rls__scope_a_cannot_update_scope_b(two_scopes, table):
    pg, _, _ = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME, "tenant-a")
    cur.execute(f"update {table} set {UPDATABLE[table]} where scope_id = 'tenant-b'")
    assert cur.rowcount == 0
    cur.execute(f"update {table} set {UPDATABLE[table]} where scope_id = 'tenant-a'")
    assert cur.rowcount == 1


def test_rls__scope_a_cannot_delete_scope_b_dispatch_rows(two_scopes):
    pg, a, b = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME, "tenant-a")
    cur.execute("delete from durable_work_dispatch where work_ref = %s", (b["work_ref"],))
    assert cur.rowcount == 0
    cur.execute("reset role")
    cur.execute("select count(*) from durable_work_dispatch where work_ref = %s", (b["work_ref"],))
    assert cur.fetchone()[0] == 1


@pytest.mark.parametrize(
    "statement",
    [
        "insert into durable_schedule_definition (scope_id, schedule_id, runtime_epoch,"
        " scope_generation, cursor_utc, created_at, updated_at)"
        " values ('tenant-b', 'sneaky', 1, 1, now(), now(), now())",
        "insert into durable_schedule_history (scope_id, schedule_id, event, recorded_at)"
        " values ('tenant-b', 'nightly', 'forged', now())",
        "insert into durable_schedule_scope (scope_id) values ('tenant-c')",
    ],
)
def test_rls__scope_a_cannot_insert_rows_of_another_scope(two_scopes, statement):
    pg, _, _ = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME, "tenant-a")
    err = refused(pg, statement)
    assert err is not None and err.sqlstate == "42501", err


def test_rls__unique_key_collision_across_scopes_reveals_nothing(two_scopes):
    pg, _, _ = two_scopes
    cur = pg.cursor()
    cur.execute("insert into durable_schedule_scope (scope_id) values ('tenant-c')")
    become(cur, RUNTIME, "tenant-c")
    # tenant-a and tenant-b already own schedule 'nightly': the key leads with scope_id, so
    # tenant-c's insert is neither refused nor told that the id exists elsewhere.
    assert refused(
        pg,
        "insert into durable_schedule_definition (scope_id, schedule_id, runtime_epoch,"
        " scope_generation, cursor_utc, created_at, updated_at)"
        " values ('tenant-c', 'nightly', 1, 1, now(), now(), now())",
    ) is None
    cur.execute("select count(*) from durable_schedule_definition")
    assert cur.fetchone()[0] == 1


def test_rls__dispatch_rows_of_other_scopes_are_invisible_to_the_runtime(two_scopes):
    pg, a, _ = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME, "tenant-a")
    cur.execute("select scope_routing_id from durable_schedule_dispatch")
    assert [r[0] for r in cur.fetchall()] == [a["routing_id"]]
    cur.execute("select scope_routing_id from durable_work_dispatch")
    assert [r[0] for r in cur.fetchall()] == [a["routing_id"]]


def test_rls__routing_lookup_admits_only_the_named_scope_row(two_scopes):
    pg, a, b = two_scopes
    cur = pg.cursor()
    become(cur, RUNTIME)
    routing = str(b["routing_id"])
    cur.execute("select set_config('durable_schedule.routing_id', %s, true)", (routing,))
    cur.execute("select scope_id from durable_schedule_scope")
    assert [r[0] for r in cur.fetchall()] == ["tenant-b"]
    cur.execute("select count(*) from durable_schedule_definition")
    assert cur.fetchone()[0] == 0


def test_rls__history_partitions_enforce_the_policy_when_queried_directly(two_scopes):
    pg, _, _ = two_scopes
    cur = pg.cursor()
    cur.execute(
        "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid"
        " where i.inhparent = 'durable_schedule_history'::regclass"
    )
    children = [r[0] for r in cur.fetchall()]
    assert children
    become(cur, RUNTIME, "tenant-a")
    for child in children:
        cur.execute(f"select count(*) from {child} where scope_id = 'tenant-b'")
        assert cur.fetchone()[0] == 0
