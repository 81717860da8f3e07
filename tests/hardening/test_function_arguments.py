"""Schema 17: store functions refuse bad arguments with their DS code, before anything is set
or written. ``durable_runner_beat`` failed with "timestamp out of range" (no DS code) for a huge
``p_seconds_since_pass`` and accepted bidi/format characters in owner and host (they reached
durable_status and the admin); ``durable_schedule_enter_scope`` failed on a bare CHECK or
row-level security error for NULL, a 300-character or a space-padded scope, and
``durable_schedule_enter_scope_to_read(NULL)`` succeeded and read nothing. Both scope functions
now apply the rule of ``validate_scope_id`` (DS301)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from durable_schedule.errors import InvalidScope
from durable_schedule.observability.heartbeat import _clean
from durable_schedule.store.transactions import validate_scope_id
from tests.hardening.test_cheaper_triggers import _manage, scratch_store

BEAT = "select durable_runner_beat(%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)"
BIDI = ["\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f"]


def _beat(owner="o", host="h", since=None):
    return [uuid.uuid4(), "work", owner, host, 1, "v", since, 0, "{}", False]


@pytest.mark.parametrize("args", [
    _beat(since=1e15), _beat(since=3153600000.5), _beat(since=float("inf")),
    *[_beat(owner=f"own{c}er") for c in BIDI], *[_beat(host=f"ho{c}st") for c in BIDI],
])
def test_beat__a_huge_interval_or_a_format_character_is_ds425_and_writes_nothing(pg, args):
    cur = pg.cursor()
    cur.execute("set local role durable_runtime")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="DS425"):
        cur.execute(BEAT, args)
    pg.rollback()
    assert pg.execute("select count(*) from durable_runner_heartbeat").fetchone()[0] == 0


def test_beat__the_largest_accepted_interval_is_written(pg):
    cur = pg.cursor()
    cur.execute("set local role durable_runtime")
    cur.execute(BEAT, _beat(since=3153600000.0))
    pg.rollback()


def test_beat__the_python_side_cleans_host_and_version_the_same_way_first():
    assert _clean("ho\u202est\u2066", 255) == "host"
    assert _clean("\u200f\u200e", 64) == "unknown"


BAD_SCOPES = [None, "x" * 300, " a", "a ", "", "a\u202eb", "a\nb", "\u00a0a"]


@pytest.mark.parametrize("function", ["durable_schedule_enter_scope",
                                      "durable_schedule_enter_scope_to_read"])
@pytest.mark.parametrize("scope", BAD_SCOPES, ids=repr)
def test_enter_scope__a_scope_python_refuses_is_ds301_before_anything_is_set(pg, function,
                                                                             scope):
    if scope is not None:  # the store applies exactly the Python rule
        with pytest.raises(InvalidScope):
            validate_scope_id(scope)
    cur = pg.cursor()
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="DS301"):
        cur.execute(f"select * from {function}(%s)", [scope])
    pg.rollback()
    assert pg.execute("select count(*) from durable_schedule_scope where scope_id is not"
                      " distinct from %s", [scope]).fetchone()[0] == 0


@pytest.mark.parametrize("scope", ["a", "x" * 200, "tenant a", "t\u00e9nant-\u4e2d"])
def test_enter_scope__a_valid_scope_still_enters(pg, scope):
    assert validate_scope_id(scope) == scope
    cur = pg.cursor()
    cur.execute("select * from durable_schedule_enter_scope_to_read(%s)", [scope])
    cur.execute("select current_user, current_setting('durable_schedule.scope_id')")
    assert cur.fetchone() == ("durable_runtime", scope)
    pg.rollback()


_ATTRIBUTES = ("select proname, prosecdef, proconfig, proacl::text[] from pg_proc where proname in"
               " ('durable_runner_beat', 'durable_schedule_enter_scope',"
               " 'durable_schedule_enter_scope_to_read') order by 1")


def test_functions__keep_security_pinned_search_path_and_grants(pg):
    owner = pg.execute("select current_user").fetchone()[0]
    rows = pg.execute(_ATTRIBUTES).fetchall()
    assert [(name, definer) for name, definer, _c, _a in rows] == [
        ("durable_runner_beat", True), ("durable_schedule_enter_scope", False),
        ("durable_schedule_enter_scope_to_read", False)]
    for name, _definer, config, acl in rows:
        assert config == ["search_path=public, pg_temp"], name
        assert sorted(a.split("=")[0] for a in acl) == sorted(["durable_runtime", owner]), name


@pytest.mark.django_db(transaction=True)
def test_migrate__schema_17_forward_on_a_store_with_data():
    with scratch_store("fix9b_args_", "0016_identity_arbiter") as url:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("select * from durable_schedule_enter_scope('tenant-a')")
            cur.execute("reset role")
            cur.execute(BEAT, [uuid.uuid4(), "work", "o\u202e", "h", 1, "v", 1e15 / 1e6, 0,
                               "{}", False])  # schema 16 accepted the bidi owner
            cur.execute("select schema_version from durable_schedule_store")
            assert cur.fetchone() == (16,)
            conn.commit()
            cur.execute(_ATTRIBUTES)
            before = cur.fetchall()
        done = _manage(url, "migrate", "--noinput")
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute(_ATTRIBUTES)
            assert cur.fetchall() == before  # SECURITY, search_path and grants as in 16
            cur.execute("select schema_version, compatibility_floor from durable_schedule_store")
            assert cur.fetchone() == (17, 12)
            # the rows of schema 16 stay; the functions refuse what they accepted
            cur.execute("select count(*) from durable_schedule_scope where scope_id = 'tenant-a'")
            assert cur.fetchone() == (1,)
            cur.execute("select lease_owner from durable_runner_heartbeat")
            assert cur.fetchall() == [("o\u202e",)]
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="DS425"):
                cur.execute(BEAT, _beat(owner="o\u202e"))
            conn.rollback()
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="DS301"):
                cur.execute("select * from durable_schedule_enter_scope_to_read(NULL)")
            conn.rollback()
            cur.execute("select * from durable_schedule_enter_scope('tenant-a')")
            cur.execute("select current_user")
            assert cur.fetchone() == ("durable_runtime",)
            conn.rollback()
