"""Schema 14 (issue 16, docs/benchmarks.md "Acceptance, fourth look"): the Work identifier
trigger's WHEN calls one PL/pgSQL function instead of inlining ``durable_schedule_is_identifier``
four times per statement. The guarantees stay those of schema 13: the same rule (the function
answers what the four inlined calls answered, NULL included), the same DS115 refusal of the
whole statement naming the field (tests/hardening/test_cheaper_triggers.py runs those against
this schema), nothing resolved through a planted search path, and no PUBLIC execute."""

from __future__ import annotations

import itertools

import psycopg
import pytest

from tests.hardening.test_cheaper_triggers import (
    _WORK_ROWS,
    SCOPE,
    _count,
    _manage,
    _scope,
    _work,
    scratch_store,
)
from tests.pgroles import RUNTIME, become, refused

#: One value of each kind the rule distinguishes: good, a forbidden character, blank, NULL.
_VALUES = ["ok", "a\u202eb", "\u00a0 ", None]


@pytest.mark.django_db
def test_function__answers_the_rule_of_the_four_fields_for_every_combination(pg):
    cur = pg.cursor()
    combos = list(itertools.product(_VALUES, repeat=4))
    cur.execute(
        "select durable_work_identifiers_ok(a, b, c, d),"
        "       durable_schedule_is_identifier(a) and durable_schedule_is_identifier(b)"
        "       and durable_schedule_is_identifier(c) and durable_schedule_is_identifier(d),"
        "       not durable_schedule_is_identifier(a) or not durable_schedule_is_identifier(b)"
        "       or not durable_schedule_is_identifier(c) or not durable_schedule_is_identifier(d)"
        "  from unnest(%s::text[], %s::text[], %s::text[], %s::text[]) as r(a, b, c, d)",
        [list(col) for col in zip(*combos, strict=True)])
    rows = cur.fetchall()
    assert len(rows) == len(combos) == 256
    for combo, (ours, conjunction, schema13_when) in zip(combos, rows, strict=True):
        assert ours is conjunction, combo
        # The trigger fires exactly when schema 13's WHEN was true (NULL: it does not fire).
        fires = None if ours is None else not ours
        assert fires is schema13_when, combo
    assert rows[0][0] is True  # all good
    assert sum(1 for r in rows if r[0] is True) == 1


@pytest.mark.django_db
def test_function__is_not_executable_by_public_and_the_trigger_uses_it(pg):
    cur = pg.cursor()
    cur.execute("select has_function_privilege('public', "
                "'durable_work_identifiers_ok(text, text, text, text)', 'execute'),"
                " has_function_privilege(%s, "
                "'durable_work_identifiers_ok(text, text, text, text)', 'execute')", (RUNTIME,))
    assert cur.fetchone() == (False, True)
    cur.execute("select pg_get_triggerdef(oid) from pg_trigger"
                " where tgname = 'durable_work_identifiers'")
    (definition,) = cur.fetchone()
    assert "BEFORE INSERT" in definition and "FOR EACH ROW WHEN" in definition
    assert "durable_work_identifiers_ok(new.command_id, new.idempotency_key, new.work_name," \
           " new.work_version)" in definition
    assert "durable_schedule_is_identifier" not in definition


@pytest.mark.django_db
def test_trigger__a_planted_rule_on_the_search_path_is_never_used(pg):
    # A caller that puts its own durable_schedule_is_identifier (answering true) first on its
    # search path still gets the store's rule: the function's calls are schema-qualified.
    cur = pg.cursor()
    _scope(cur)
    cur.execute("create schema planted")
    cur.execute("create function planted.durable_schedule_is_identifier(value text)"
                " returns boolean language sql immutable as $$ select true $$")
    cur.execute("grant usage on schema planted to public")
    cur.execute("grant execute on function planted.durable_schedule_is_identifier(text)"
                " to public")
    become(cur, RUNTIME, SCOPE)
    cur.execute("set local search_path = planted, public")
    err = refused(pg, _WORK_ROWS, {"scope": SCOPE, "c": ["ok", "a\u200bb"], "k": ["k", "k"],
                                   "n": ["t.job"] * 2, "v": ["v1"] * 2, "q": ["default"] * 2,
                                   "p": [0, 0]})
    assert err is not None and err.sqlstate == "23514", err
    assert str(err).startswith("DS115: command_id breaks the identifier rule"), str(err)
    assert len(_work(cur, [("fine", "k", "t.job", "v1", "default", 0)])) == 1


@pytest.mark.django_db(transaction=True)
def test_migrate__schema_14_forward_on_a_store_with_data():
    with scratch_store("ds_acc_", "0013_cheaper_triggers") as url:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            _scope(cur)
            _work(cur, [("c1", "k", "t.job", "v1", "emails", 2)])
            cur.execute("select schema_version from durable_schedule_store")
            assert cur.fetchone() == (13,)
            conn.commit()

        # To schema 14 (this file's migration); schema 15 is tests/hardening/
        # test_cheaper_routing.py.
        done = _manage(url, "migrate", "durable_schedule", "0014_cheaper_acceptance",
                       "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("select schema_version, compatibility_floor from durable_schedule_store")
            assert cur.fetchone() == (14, 12)
            assert _count(cur, "durable_work") == 1
            become(cur, RUNTIME, SCOPE)
            for position, field in enumerate(("command_id", "idempotency_key", "work_name",
                                              "work_version")):
                row = ["c2", "k", "t.job", "v1"]
                row[position] = "x\u2029y"
                err = refused(conn, _WORK_ROWS, {"scope": SCOPE, "c": [row[0]], "k": [row[1]],
                                                 "n": [row[2]], "v": [row[3]],
                                                 "q": ["default"], "p": [0]})
                assert err is not None and str(err).startswith(f"DS115: {field} "), str(err)
            assert len(_work(cur, [("c2", "k", "t.job", "v1", "default", 0)])) == 1
            conn.rollback()
