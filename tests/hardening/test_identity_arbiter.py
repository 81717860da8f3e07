"""Schema 16 (issue 16, docs/benchmarks.md "Acceptance, sixth look").

The object form of the acceptance (several items) inserts with the identity key as its only
``ON CONFLICT`` arbiter; a row that collides on another unique index of durable_work (a work id
stored under another identity) raises unique_violation inside a subtransaction, which undoes
the statement, and the schema 15 statement (every unique index an arbiter) runs in its place.
What must hold: every answer is schema 15's (created, duplicate, conflict, tampered,
work_id_taken, other_work_id, rolled_back), nothing is written twice or left behind by the undone
statement, concurrent batches still wait on each other in one order and find each other's
committed rows, and REPEATABLE READ still answers 40001. The array form (a single enqueue) is
unchanged. tests/hardening/test_object_form_review.py runs its checks against this schema too.
"""

from __future__ import annotations

import json
import threading
import uuid

import psycopg
import pytest

from tests.hardening.test_cheaper_routing import _accept, _forms, _request
from tests.hardening.test_cheaper_triggers import SCOPE, _count, _manage, scratch_store

_TABLES = ("durable_work", "durable_work_dispatch", "durable_work_history")


def _counts(cur) -> tuple[int, ...]:
    return tuple(_count(cur, t) for t in _TABLES)


def _work_id(cur, command_id: str) -> uuid.UUID:
    cur.execute("select work_id from durable_work where command_id = %s", (command_id,))
    (work_id,) = cur.fetchone()
    return work_id


def _statuses(rows) -> list[tuple[int, str]]:
    return [(r[0], r[1]) for r in rows]


@pytest.mark.django_db
def test_function__object_form_arbiter_is_the_identity_with_the_full_statement_as_fallback(pg):
    cur = pg.cursor()
    cur.execute("select prosrc, proconfig from pg_proc"
                " where proname = 'durable_schedule_accept_rows'")
    rows = cur.fetchall()
    assert len(rows) == 1
    body, config = rows[0]
    assert config is not None and any(c.startswith("search_path=") for c in config), config
    narrow = "ON CONFLICT (scope_id, command_id, idempotency_key) DO NOTHING"
    assert body.count(narrow) == 1, body
    # the fallback and the array form keep every unique index as an arbiter
    assert body.count("ON CONFLICT DO NOTHING") == 2, body
    assert body.index(narrow) < body.index("EXCEPTION WHEN unique_violation THEN")
    cur.execute("select schema_version from durable_schedule_store")
    assert cur.fetchone()[0] >= 16  # schema 17 changed other functions only


@pytest.mark.django_db
def test_object_form__a_work_id_taken_by_another_identity_answers_work_id_taken(pg):
    # The colliding row raises in the identity-arbiter insert; the fallback answers exactly as
    # schema 15 did and the undone statement leaves nothing (no row, dispatch or history).
    cur = pg.cursor()
    _accept(cur, _forms([_request(0), _request(1)])[0])
    taken = _work_id(cur, "cmd-1")
    before = _counts(cur)
    obj, arr = _forms([_request(2), _request(3, work_id=taken), _request(4)])
    answers = {form: _accept(cur, parameter) for form, parameter in (("object", obj),
                                                                      ("array", arr))}
    assert answers["object"] == answers["array"]
    assert _statuses(answers["object"]) == [(0, "rolled_back"), (1, "work_id_taken"),
                                            (2, "rolled_back")]
    assert answers["object"][1][2] == taken
    assert _counts(cur) == before
    # the same call without the taken id then creates all three, each once
    rows = _accept(cur, _forms([_request(2), _request(3), _request(4)])[0])
    assert [r[1] for r in rows] == ["created"] * 3
    assert _counts(cur) == (before[0] + 3, before[1] + 3, before[2] + 3)


@pytest.mark.django_db
def test_object_form__duplicates_and_a_taken_work_id_together_answer_as_before(pg):
    # A duplicate whose explicit work id is its own stored one (no collision), a duplicate
    # naming an id of its own that is not the stored one (other_work_id) and a new identity
    # on a taken id, in one call.
    cur = pg.cursor()
    _accept(cur, _forms([_request(0), _request(1)])[0])
    own, other = _work_id(cur, "cmd-0"), _work_id(cur, "cmd-1")
    before = _counts(cur)
    obj, arr = _forms([_request(0, work_id=own), _request(1, work_id=uuid.uuid4()),
                       _request(5, work_id=other)])
    rows = _accept(cur, obj)
    assert rows == _accept(cur, arr)
    assert _statuses(rows) == [(0, "duplicate"), (1, "other_work_id"), (2, "work_id_taken")]
    assert _counts(cur) == before


@pytest.mark.django_db
def test_object_form__a_crafted_work_id_twice_in_one_parameter_answers_as_schema_15(pg):
    # The client refuses one work id under two identities (DS207) before sending; a crafted
    # parameter that carries it anyway collides inside the insert itself, and the fallback
    # gives the answers and rows of the schema 15 statement, which the array form still runs.
    cur = pg.cursor()
    obj, _ = _forms([_request(0), _request(1), _request(2)])
    decoded = json.loads(obj)
    decoded["items"][2]["work_id"] = decoded["items"][0]["work_id"]
    decoded["items"][2]["explicit"] = True
    complete = [{**item, **decoded["shared"][item["shared"]]} for item in decoded["items"]]
    for item in complete:
        del item["shared"]
    written = {}
    for form, parameter in (("object", json.dumps(decoded)), ("array", json.dumps(complete))):
        with pg.transaction(force_rollback=True):
            rows = _accept(cur, parameter)
            cur.execute("select command_id, work_id from durable_work order by 1")
            written[form] = (rows, cur.fetchall(), _counts(cur))
    assert written["object"] == written["array"]
    assert [c for c, _ in written["object"][1]] == ["cmd-0", "cmd-1"]


def _scope_committed(conn) -> None:
    conn.execute("insert into durable_schedule_scope (scope_id) values (%s)", (SCOPE,))
    conn.commit()


def _waiting(target) -> tuple[threading.Thread, list]:
    out: list = []

    def run():
        try:
            out.append(target())
        except psycopg.Error as exc:  # reported to the test, not lost in the thread
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(0.5)
    return thread, out


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_concurrent__a_work_id_held_by_an_uncommitted_batch(pg_factory, outcome):
    # Batch B names, under a new identity, the work id batch A has inserted but not committed.
    # B waits on A's row; A commits: B answers work_id_taken and writes nothing; A rolls back:
    # B creates all of its items.
    first, second = pg_factory(), pg_factory()
    _scope_committed(first)
    held = uuid.uuid4()
    obj_a, _ = _forms([_request(0, work_id=held), _request(1)])
    obj_b, _ = _forms([_request(2), _request(3, work_id=held)])
    assert [r[1] for r in _accept(first.cursor(), obj_a)] == ["created", "created"]
    thread, out = _waiting(lambda: _accept(second.cursor(), obj_b))
    assert thread.is_alive()  # waiting on the held work id's uncommitted index entry
    getattr(first, outcome)()
    thread.join(10)
    assert not thread.is_alive()
    (rows,) = out
    second.commit()
    cur = first.cursor()
    if outcome == "commit":
        assert _statuses(rows) == [(0, "rolled_back"), (1, "work_id_taken")]
        assert rows[1][2] == held
        assert _counts(cur) == (2, 2, 2)
    else:
        assert [r[1] for r in rows] == ["created", "created"]
        cur.execute("select command_id from durable_work where work_id = %s", (held,))
        assert cur.fetchall() == [("cmd-3",)]
        assert _counts(cur) == (2, 2, 2)
    first.commit()


@pytest.mark.django_db(transaction=True)
def test_concurrent__repeatable_read_still_answers_40001_for_a_work_id_committed_meanwhile(
        pg_factory):
    first, second = pg_factory(), pg_factory()
    _scope_committed(first)
    held = uuid.uuid4()
    second.execute("set transaction isolation level repeatable read")
    second.execute("select 1")  # the snapshot is taken before A commits
    obj_a, _ = _forms([_request(0, work_id=held), _request(1)])
    obj_b, _ = _forms([_request(2), _request(3, work_id=held)])
    _accept(first.cursor(), obj_a)
    thread, out = _waiting(lambda: _accept(second.cursor(), obj_b))
    assert thread.is_alive()
    first.commit()
    thread.join(10)
    (err,) = out
    assert isinstance(err, psycopg.Error) and err.sqlstate == "40001", err
    second.rollback()
    assert _counts(first.cursor()) == (2, 2, 2)
    first.commit()


@pytest.mark.django_db(transaction=True)
def test_concurrent__overlapping_batches_with_explicit_ids_never_deadlock_nor_write_twice(
        pg_factory):
    # Four threads, each a batch over the same ten identities (explicit work ids, shuffled
    # orders, some new identities of their own, two sets): every identity is written once, each
    # batch answers created or duplicate for each, with the one stored work id.
    _scope_committed(pg_factory())
    ids = {i: uuid.uuid4() for i in range(10)}
    batches = []
    for n in range(4):
        order = list(range(10))[n:] + list(range(10))[:n]
        order = order[::-1] if n % 2 else order
        own = [_request(100 + 10 * n + k, queue="mail") for k in range(3)]
        batches.append([_request(i, work_id=ids[i]) for i in order] + own)
    conns = [pg_factory() for _ in batches]
    barrier = threading.Barrier(len(batches))
    results: dict[int, object] = {}

    def run(n):
        obj, _ = _forms(batches[n])
        barrier.wait()
        try:
            results[n] = _accept(conns[n].cursor(), obj)
            conns[n].commit()
        except psycopg.Error as exc:
            results[n] = exc
            conns[n].rollback()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(not t.is_alive() for t in threads)
    for n, rows in results.items():
        assert not isinstance(rows, Exception), (n, rows)
        assert {r[1] for r in rows} <= {"created", "duplicate"}, rows
        for r in rows:
            request = batches[n][r[0]]
            if request.work_id is not None:
                assert r[2] == request.work_id
    created = [r for rows in results.values() for r in rows if r[1] == "created"]
    assert len(created) == 10 + 4 * 3
    cur = conns[0].cursor()
    assert _counts(cur) == (22, 22, 22)
    cur.execute("select count(distinct (command_id, idempotency_key)), count(distinct work_id)"
                "  from durable_work")
    assert cur.fetchone() == (22, 22)
    conns[0].commit()


@pytest.mark.django_db(transaction=True)
def test_migrate__schema_16_forward_on_a_store_with_data():
    with scratch_store("ds_arb_", "0015_cheaper_routing") as url:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            obj, _ = _forms([_request(0), _request(1, queue="mail")])
            assert [r[1] for r in _accept(cur, obj)] == ["created", "created"]
            taken = _work_id(cur, "cmd-1")
            cur.execute("select schema_version from durable_schedule_store")
            assert cur.fetchone() == (15,)
            conn.commit()

        done = _manage(url, "migrate", "durable_schedule", "0016_identity_arbiter",
                       "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("select schema_version, compatibility_floor from durable_schedule_store")
            assert cur.fetchone() == (16, 12)
            # the rows of schema 15 answer duplicate, a taken work id is refused, new ones land
            obj, arr = _forms([_request(0), _request(1, queue="mail"), _request(2)])
            assert [r[1] for r in _accept(cur, obj)] == ["duplicate", "duplicate", "created"]
            single = json.dumps(json.loads(arr)[2:])
            assert [r[1] for r in _accept(cur, single)] == ["duplicate"]
            rows = _accept(cur, _forms([_request(3, work_id=taken), _request(4)])[0])
            assert _statuses(rows) == [(0, "work_id_taken"), (1, "rolled_back")]
            assert _counts(cur) == (3, 3, 3)
            conn.rollback()
