"""Schema 13 (issue 16, docs/benchmarks.md "Triggers"): the identifier rule moved into the
insert triggers' WHEN clause and the Work wake-up became one trigger call per statement. The
guarantees stay those of schemas 8 and 9: a bad identifier refuses its whole statement with the
same DS115 text, a dispatch row's queue and priority are the Work row's whatever the insert says,
and listeners get one wake-up per distinct queue that became due."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.conftest import database_url
from tests.pgroles import RUNTIME, become, refused

ROOT = Path(__file__).resolve().parents[2]
SCOPE = "tenant-t"

#: A raw multi-row Work insert, past the Python layer: one row per (command_id, key, name,
#: version, queue) tuple of the parameter.
_WORK_ROWS = """
insert into durable_work (scope_id, work_id, command_id, idempotency_key, work_name, work_version,
                          payload, provider_safety, fingerprint_schema, fingerprint_digest,
                          retry_policy, accepted_at, due_at, updated_at, queue_name, priority)
select %(scope)s, gen_random_uuid(), r.c, r.k, r.n, r.v, '{}', 'idempotent', 'v1', 'x', '{}',
       now(), now(), now(), r.q, r.p
  from unnest(%(c)s::text[], %(k)s::text[], %(n)s::text[], %(v)s::text[], %(q)s::text[],
              %(p)s::smallint[]) as r(c, k, n, v, q, p)
returning id
"""


def _work(cur, rows: list[tuple[str, str, str, str, str, int]], scope: str = SCOPE) -> list[int]:
    columns = list(zip(*rows, strict=True))
    cur.execute(_WORK_ROWS, {"scope": scope, "c": list(columns[0]), "k": list(columns[1]),
                             "n": list(columns[2]), "v": list(columns[3]),
                             "q": list(columns[4]), "p": list(columns[5])})
    return [r[0] for r in cur.fetchall()]


def _scope(cur, scope: str = SCOPE) -> int:
    """Only the scope row (tests/store/seed.py would add Work and dispatch rows of its own)."""
    cur.execute("insert into durable_schedule_scope (scope_id) values (%s) returning routing_id",
                (scope,))
    return cur.fetchone()[0]


def _count(cur, table: str) -> int:
    cur.execute(sql.SQL("select count(*) from {}").format(sql.Identifier(table)))
    return cur.fetchone()[0]


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["command_id", "idempotency_key", "work_name", "work_version"])
def test_identifiers__one_bad_row_in_the_middle_refuses_the_whole_statement(pg, field):
    cur = pg.cursor()
    _scope(cur)
    good = [(f"c{i}", "k", "t.job", "v1", "default", 0) for i in range(5)]
    bad = dict(zip(("command_id", "idempotency_key", "work_name", "work_version"),
                   ("c-bad", "k", "t.job", "v1"), strict=True))
    bad[field] = "a\u202eb"  # a right-to-left override: breaks the rule anywhere in a value
    rows = good[:2] + [(*bad.values(), "default", 0)] + good[2:]
    become(cur, RUNTIME, SCOPE)
    err = refused(pg, _WORK_ROWS, {"scope": SCOPE, **{
        key: [r[i] for r in rows] for i, key in enumerate("cknvqp")}})
    assert err is not None and err.sqlstate == "23514", err
    assert str(err).startswith(f"DS115: {field} breaks the identifier rule"), str(err)
    assert _count(cur, "durable_work") == 0  # nothing of the statement was written
    # The same rows without the bad one are accepted: the rule, not the shape, refused it.
    assert len(_work(cur, good)) == 5


@pytest.mark.django_db
def test_identifiers__the_refusal_comes_before_the_rows_constraints(pg):
    # BEFORE INSERT as in schema 8: a row that breaks the rule and a CHECK constraint (its
    # queue is blank) is refused by the rule, naming the field.
    cur = pg.cursor()
    _scope(cur)
    become(cur, RUNTIME, SCOPE)
    err = refused(pg, _WORK_ROWS, {"scope": SCOPE, "c": ["a\u2028b"], "k": ["k"], "n": ["t.job"],
                                   "v": ["v1"], "q": [" "], "p": [0]})
    assert err is not None and str(err).startswith("DS115: command_id "), str(err)


@pytest.mark.django_db
def test_identifiers__scope_and_schedule_rows_keep_their_refusals(pg):
    cur = pg.cursor()
    err = refused(pg, "insert into durable_schedule_scope (scope_id)"
                      " values ('ok-1'), ('a\u200bb'), ('ok-2')")
    assert err is not None and err.sqlstate == "23514"
    assert str(err).startswith("DS301: scope_id breaks the identifier rule"), str(err)
    cur.execute("select count(*) from durable_schedule_scope where scope_id like 'ok-%'")
    assert cur.fetchone() == (0,)
    _scope(cur)
    err = refused(pg, "insert into durable_schedule_definition (scope_id, schedule_id,"
                      " runtime_epoch, scope_generation, cursor_utc, created_at, updated_at)"
                      " select %s, s, 1, 1, now(), now(), now()"
                      " from unnest(array['fine-a', '\u00a0', 'fine-b']) s", (SCOPE,))
    assert err is not None and str(err).startswith("DS115: schedule_id "), str(err)
    cur.execute("select count(*) from durable_schedule_definition where schedule_id like 'fine-%'")
    assert cur.fetchone() == (0,)


@pytest.mark.django_db
def test_routing__a_forged_queue_on_a_raw_dispatch_insert_is_corrected(pg):
    cur = pg.cursor()
    routing_id = _scope(cur)
    emails, default = _work(cur, [("c1", "k", "t.job", "v1", "emails", 7),
                                  ("c2", "k", "t.job", "v1", "default", 0)])
    # As the owner (no column grant stops it): the queue and priority written are the Work's.
    cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at,"
                " queue_name, priority) values (%s, %s, now(), 'vip', 100), (%s, %s, now(),"
                " 'vip', 100) returning work_ref, queue_name, priority",
                (routing_id, emails, routing_id, default))
    assert sorted(cur.fetchall()) == sorted([(emails, "emails", 7), (default, "default", 0)])
    cur.execute("select work_ref, queue_name, priority from durable_work_dispatch")
    assert sorted(cur.fetchall()) == sorted([(emails, "emails", 7), (default, "default", 0)])


@pytest.mark.django_db
def test_routing__the_runtime_cannot_name_a_queue_and_gets_the_works(pg):
    cur = pg.cursor()
    routing_id = _scope(cur)
    (emails,) = _work(cur, [("c1", "k", "t.job", "v1", "emails", -3)])
    become(cur, RUNTIME, SCOPE)
    err = refused(pg, "insert into durable_work_dispatch (scope_routing_id, work_ref, due_at,"
                      " queue_name) values (%s, %s, now(), 'vip')", (routing_id, emails))
    assert err is not None and err.sqlstate == "42501", err
    cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                " values (%s, %s, now())", (routing_id, emails))
    cur.execute("reset role")
    cur.execute("select queue_name, priority from durable_work_dispatch where work_ref = %s",
                (emails,))
    assert cur.fetchone() == ("emails", -3)


def _commit_and_read(writer: psycopg.Connection, listener: psycopg.Connection) -> list[str]:
    """Commit the writer and return the wake-ups of that transaction. A marker sent last by the
    same transaction ends the read: one transaction's notifications arrive in the order sent,
    so everything before the marker is all it woke, with no waiting on a clock."""
    marker = "end-" + uuid.uuid4().hex
    writer.execute("select pg_notify('durable_work_due', %s)", (marker,))
    writer.commit()
    payloads = []
    for note in listener.notifies(timeout=60):
        if note.payload == marker:
            return sorted(payloads)
        payloads.append(note.payload)
    raise AssertionError(f"the marker never arrived; got {payloads}")


@pytest.mark.django_db(transaction=True)
def test_notify__one_wake_up_per_distinct_due_queue_of_a_multi_row_insert(pg_factory):
    listener = pg_factory(autocommit=True)
    listener.execute("LISTEN durable_work_due")
    writer = pg_factory()
    cur = writer.cursor()
    routing_id = _scope(cur)
    rows = [(f"c{i}", "k", "t.job", "v1", q, 0)
            for i, q in enumerate(["emails", "emails", "reports", "default", "held", "emails"])]
    refs = _work(cur, rows)
    assert _commit_and_read(writer, listener) == []  # Work rows alone wake nobody
    # "held" has only a row without due time; the others have due rows, "emails" three.
    cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                " select %s, r, case when r = %s then null else now() end"
                " from unnest(%s::bigint[]) r", (routing_id, refs[4], refs))
    assert _commit_and_read(writer, listener) == ["default", "emails", "reports"]
    # A statement that inserts nothing (every row conflicts) wakes nobody.
    cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                " select %s, r, now() from unnest(%s::bigint[]) r on conflict do nothing",
                (routing_id, refs))
    assert cur.rowcount == 0
    assert _commit_and_read(writer, listener) == []
    # The per-row "sooner" trigger is unchanged: the held row becoming due wakes its queue.
    cur.execute("update durable_work_dispatch set due_at = now() where work_ref = %s",
                (refs[4],))
    assert _commit_and_read(writer, listener) == ["held"]


@pytest.mark.django_db(transaction=True)
def test_notify__two_statements_of_one_transaction_wake_each_queue_once(pg_factory):
    listener = pg_factory(autocommit=True)
    listener.execute("LISTEN durable_work_due")
    writer = pg_factory()
    cur = writer.cursor()
    routing_id = _scope(cur)
    refs = _work(cur, [(f"c{i}", "k", "t.job", "v1", "emails", 0) for i in range(4)])
    for half in (refs[:2], refs[2:]):
        cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                    " select %s, r, now() from unnest(%s::bigint[]) r", (routing_id, half))
    assert _commit_and_read(writer, listener) == ["emails"]


@contextmanager
def scratch_store(prefix: str, migration: str) -> Iterator[str]:
    """A new database migrated to ``migration`` of durable_schedule (in a child process, as an
    upgrade runs): its URL; dropped afterwards. For the forward-migration tests."""
    name = prefix + uuid.uuid4().hex[:8]
    base = database_url()
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        url = base.rsplit("/", 1)[0] + "/" + name
        done = _manage(url, "migrate", "durable_schedule", migration, "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        yield url
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(sql.SQL("drop database if exists {} with (force)").format(
                sql.Identifier(name)))


def _manage(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {"DATABASE_URL": url, "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # run against the tree under test, not an installed copy
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run([sys.executable, "testproject/manage.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


_TRIGGERS = """
select tgname, pg_get_triggerdef(oid) from pg_trigger
 where tgname in ('durable_work_identifiers', 'durable_schedule_scope_identifier',
                  'durable_schedule_definition_identifier', 'durable_work_dispatch_notify_insert',
                  'durable_work_dispatch_notify_sooner', 'durable_work_dispatch_routing')
"""


@pytest.mark.django_db(transaction=True)
def test_migrate__schema_13_forward_on_a_store_with_data():
    with scratch_store("ds_trg_", "0012_buffer_all") as url:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            routing_id = _scope(cur)
            refs = _work(cur, [("c1", "k", "t.job", "v1", "emails", 2),
                               ("c2", "k", "t.job", "v1", "default", 0)])
            # A row stored before the identifier rule (older code): it must still move.
            cur.execute("alter table durable_work disable trigger durable_work_identifiers")
            (legacy,) = _work(cur, [("old\u202ecmd", "k", "t.job", "v1", "default", 0)])
            cur.execute("alter table durable_work enable trigger durable_work_identifiers")
            cur.execute("insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)"
                        " select %s, r, now() from unnest(%s::bigint[]) r",
                        (routing_id, [*refs, legacy]))
            cur.execute("select schema_version from durable_schedule_store")
            assert cur.fetchone() == (12,)
            before = {t: _count(cur, t) for t in ("durable_work", "durable_work_dispatch")}
            conn.commit()

        # To schema 13 (this file's migration); schema 14 replaces the Work identifier
        # trigger's WHEN again (tests/hardening/test_cheaper_acceptance.py).
        done = _manage(url, "migrate", "durable_schedule", "0013_cheaper_triggers", "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("select schema_version, compatibility_floor from durable_schedule_store")
            assert cur.fetchone() == (13, 12)
            assert {t: _count(cur, t) for t in before} == before
            cur.execute("select work_ref, queue_name, priority from durable_work_dispatch")
            assert sorted(cur.fetchall()) == sorted(
                [(refs[0], "emails", 2), (refs[1], "default", 0), (legacy, "default", 0)])
            cur.execute(_TRIGGERS)
            triggers = dict(cur.fetchall())
            assert len(triggers) == 6
            assert "FOR EACH ROW WHEN" in triggers["durable_work_identifiers"]
            assert "BEFORE INSERT" in triggers["durable_work_identifiers"]
            assert "REFERENCING NEW TABLE AS new_dispatch FOR EACH STATEMENT" in triggers[
                "durable_work_dispatch_notify_insert"]
            assert "AFTER UPDATE OF due_at" in triggers["durable_work_dispatch_notify_sooner"]
            cur.execute("select has_function_privilege('public',"
                        " 'durable_work_notify_inserted_queues()', 'execute')")
            assert cur.fetchone() == (False,)
            # The old row still moves; the rule still refuses new bad rows.
            become(cur, RUNTIME, SCOPE)
            cur.execute("update durable_work set state = 'succeeded', finished_at = now(),"
                        " updated_at = now() where id = %s", (legacy,))
            assert cur.rowcount == 1
            err = refused(conn, _WORK_ROWS, {"scope": SCOPE, "c": ["n1", "n\u2029"],
                                             "k": ["k", "k"], "n": ["t.job"] * 2,
                                             "v": ["v1"] * 2, "q": ["default"] * 2,
                                             "p": [0, 0]})
            assert err is not None and str(err).startswith("DS115: command_id "), str(err)
            conn.rollback()
