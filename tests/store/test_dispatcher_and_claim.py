"""docs/protocol/storage.md / issue 2: the dispatcher role's surface and claim_schedule_dispatch's
contract."""

from __future__ import annotations

import pytest

from tests.pgroles import DISPATCHER, become, refused
from tests.store.seed import SCOPED_TABLES, seed_scope

pytestmark = pytest.mark.django_db

ROUTING_COLUMNS = ("dispatch_id", "scope_routing_id", "schedule_id", "lease_owner",
                   "lease_expires_at", "lease_generation", "dispatch_revision")


@pytest.fixture
def seeded(pg):
    with pg.cursor() as cur:
        a = seed_scope(cur, "tenant-a")
        b = seed_scope(cur, "tenant-b")
    return pg, a, b


def dispatch_rows(cur):
    cur.execute("reset role")
    cur.execute(
        "select schedule_id, scope_routing_id, due_at, lease_owner, lease_expires_at,"
        " lease_generation, dispatch_revision from durable_schedule_dispatch order by dispatch_id"
    )
    return cur.fetchall()


def test_dispatcher__reads_routing_columns_of_the_dispatch_table(seeded):
    pg, _, _ = seeded
    cur = pg.cursor()
    become(cur, DISPATCHER)
    cur.execute(f"select {', '.join(ROUTING_COLUMNS)} from durable_schedule_dispatch")
    assert len(cur.fetchall()) == 2


def test_dispatcher__cannot_read_the_due_time(seeded):
    pg, _, _ = seeded
    cur = pg.cursor()
    become(cur, DISPATCHER)
    err = refused(pg, "select due_at from durable_schedule_dispatch")
    assert err is not None and err.sqlstate == "42501"


@pytest.mark.parametrize(
    "table", SCOPED_TABLES + ("durable_schedule_store", "durable_work_dispatch")
)
def test_dispatcher__cannot_read_any_other_table(seeded, table):
    pg, _, _ = seeded
    cur = pg.cursor()
    become(cur, DISPATCHER)
    err = refused(pg, f"select count(*) from {table}")
    assert err is not None and err.sqlstate == "42501", table


@pytest.mark.parametrize(
    "call",
    [
        "select durable_schedule_clock('clock')",
        "select * from claim_work_dispatch('w', interval '30 seconds')",
        "select ensure_schedule_history_partitions()",
    ],
)
def test_dispatcher__can_execute_only_the_claim_function(seeded, call):
    pg, _, _ = seeded
    cur = pg.cursor()
    become(cur, DISPATCHER)
    err = refused(pg, call)
    assert err is not None and err.sqlstate == "42501", call


@pytest.mark.parametrize(
    "owner, lease",
    [
        (None, "30 seconds"),
        ("", "30 seconds"),
        ("   ", "30 seconds"),
        ("worker\n1", "30 seconds"),
        ("worker\t1", "30 seconds"),
        ("worker\r1", "30 seconds"),
        ("worker\x1b1", "30 seconds"),
        ("worker\x7f", "30 seconds"),
        ("worker-1", None),
        ("worker-1", "0 seconds"),
        ("worker-1", "-1 seconds"),
        ("worker-1", "10 minutes 0.000001 seconds"),
    ],
)
def test_claim__rejects_bad_input_before_changing_any_row(seeded, owner, lease):
    pg, _, _ = seeded
    cur = pg.cursor()
    before = dispatch_rows(cur)
    become(cur, DISPATCHER)
    err = refused(
        pg, "select * from claim_schedule_dispatch(%s::text, %s::interval, 10)", (owner, lease)
    )
    assert err is not None and "DS404" in str(err)
    assert dispatch_rows(cur) == before


def test_claim__accepts_exactly_ten_minutes_and_returns_only_routing_columns(seeded):
    pg, a, b = seeded
    cur = pg.cursor()
    become(cur, DISPATCHER)
    cur.execute("select * from claim_schedule_dispatch('worker-1', interval '10 minutes', 10)")
    assert [d.name for d in cur.description] == [
        "scope_routing_id", "schedule_id", "dispatch_revision"
    ]
    rows = cur.fetchall()
    assert sorted(r[0] for r in rows) == sorted([a["routing_id"], b["routing_id"]])
    after = dispatch_rows(cur)
    assert all(r[3] == "worker-1" and r[5] == 1 and r[6] == 2 for r in after)


def test_claim__takes_at_most_max_rows(seeded):
    pg, _, _ = seeded
    cur = pg.cursor()
    become(cur, DISPATCHER)
    cur.execute("select * from claim_schedule_dispatch('worker-1', interval '30 seconds')")
    assert len(cur.fetchall()) == 1


def test_claim__does_not_take_rows_that_are_not_due(seeded):
    pg, _, _ = seeded
    cur = pg.cursor()
    cur.execute("update durable_schedule_dispatch set due_at = now() + interval '1 hour'")
    become(cur, DISPATCHER)
    cur.execute("select * from claim_schedule_dispatch('worker-1', interval '30 seconds', 10)")
    assert cur.fetchall() == []


def test_claim__concurrent_claimers_get_disjoint_rows(pg_factory, seeded):
    pg, _, _ = seeded
    pg.commit()  # the seed must be visible to the other sessions
    try:
        first, second = pg_factory(), pg_factory()
        c1, c2 = first.cursor(), second.cursor()
        become(c1, DISPATCHER)
        become(c2, DISPATCHER)
        c1.execute("select schedule_id, scope_routing_id from "
                   "claim_schedule_dispatch('one', interval '30 seconds', 1)")
        got1 = c1.fetchall()
        # first still holds its row lock (open transaction): SKIP LOCKED must pass over it.
        c2.execute("select schedule_id, scope_routing_id from "
                   "claim_schedule_dispatch('two', interval '30 seconds', 10)")
        got2 = c2.fetchall()
        assert len(got1) == 1 and len(got2) == 1
        assert set(got1).isdisjoint(got2)
        first.rollback()
        second.rollback()
    finally:
        with pg.cursor() as cur:
            cur.execute("truncate durable_schedule_scope, durable_schedule_definition,"
                        " durable_schedule_generation, durable_schedule_occurrence,"
                        " durable_schedule_dispatch, durable_schedule_history, durable_work,"
                        " durable_work_dispatch, durable_work_permit, durable_work_quarantine,"
                        " durable_work_history cascade")
        pg.commit()


def test_claim__an_expired_lease_is_claimable_again_with_a_bumped_generation(seeded):
    pg, _, _ = seeded
    cur = pg.cursor()
    clock = "create or replace function durable_schedule_clock(kind text default 'clock')" \
            " returns timestamptz language sql volatile as $$ select %s::timestamptz $$"
    cur.execute(clock.replace("%s", "'2030-01-01 12:00:00+00'"))
    cur.execute("update durable_schedule_dispatch set due_at = '2030-01-01 11:00:00+00'")
    become(cur, DISPATCHER)
    cur.execute("select * from claim_schedule_dispatch('one', interval '30 seconds', 10)")
    assert len(cur.fetchall()) == 2
    cur.execute("select * from claim_schedule_dispatch('two', interval '30 seconds', 10)")
    assert cur.fetchall() == []  # leased and not expired
    cur.execute("reset role")
    cur.execute(clock.replace("%s", "'2030-01-01 12:00:30+00'"))
    become(cur, DISPATCHER)
    cur.execute("select * from claim_schedule_dispatch('two', interval '30 seconds', 10)")
    assert len(cur.fetchall()) == 2
    rows = dispatch_rows(cur)
    assert all(r[3] == "two" and r[5] == 2 and r[6] == 3 for r in rows)


def test_claim__ignores_objects_planted_on_the_callers_search_path(seeded):
    pg, _, _ = seeded
    cur = pg.cursor()
    cur.execute("create schema planted")
    cur.execute("create table planted.durable_schedule_dispatch (like durable_schedule_dispatch)")
    cur.execute(
        "create function planted.durable_schedule_clock(kind text default 'clock')"
        " returns timestamptz language sql as $$ select '1999-01-01'::timestamptz $$"
    )
    cur.execute("grant usage on schema planted to durable_dispatcher")
    cur.execute("grant all on planted.durable_schedule_dispatch to durable_dispatcher")
    cur.execute("grant execute on function planted.durable_schedule_clock(text) to public")
    become(cur, DISPATCHER)
    cur.execute("set local search_path = planted, public")
    cur.execute("select * from claim_schedule_dispatch('worker-1', interval '30 seconds', 10)")
    # The planted clock says 1999, before every due time: had it been used, nothing was due.
    assert len(cur.fetchall()) == 2
    cur.execute("select count(*) from planted.durable_schedule_dispatch")
    assert cur.fetchone()[0] == 0
