"""Identifier lengths are counted in characters (code points), the same in Python and SQL, and
the longest identifiers the rule admits -- 200 characters of four UTF-8 bytes each -- work
through every path: schedule create, a schedule pass that accepts Work, enqueue, a Work pass,
the reads (docs/security.md "Identifiers"). 201 characters are refused by both layers; 200
characters are admitted whatever their byte length (800 bytes here), and no index on the
identity keys (scope, command, idempotency key: 2400 bytes together) refuses them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from django.db import connection

from durable_schedule import schedules, work
from durable_schedule.errors import InvalidIdentifier, InvalidScope
from durable_schedule.schedules import Every
from durable_schedule.store.transactions import validate_scope_id
from durable_schedule.work import registry
from durable_schedule.work.enqueue import identifier
from tests.conftest import T0
from tests.schedules.conftest import leave_transaction_forms, run_pass

pytestmark = pytest.mark.django_db

WIDE = "\U0001f600"  # four bytes in UTF-8, one character
LONGEST = WIDE * 200
TOO_LONG = WIDE * 201


def test_lengths__are_characters_in_python_and_sql(pg):
    assert len(LONGEST.encode()) == 800
    assert validate_scope_id(LONGEST) == LONGEST
    assert identifier(LONGEST, "command_id") == LONGEST
    with pytest.raises(InvalidScope):
        validate_scope_id(TOO_LONG)
    with pytest.raises(InvalidIdentifier):
        identifier(TOO_LONG, "command_id")
    cur = pg.cursor()
    cur.execute("select length(%s), octet_length(%s)", (LONGEST, LONGEST))
    assert cur.fetchone() == (200, 800)
    cur.execute("savepoint s")
    with pytest.raises(Exception, match="DS301"):
        cur.execute("select * from durable_schedule_enter_scope(%s)", (TOO_LONG,))
    cur.execute("rollback to savepoint s")
    cur.execute("select * from durable_schedule_enter_scope(%s)", (LONGEST,))


def test_longest_identifiers__work_through_schedules_work_and_reads(clock):
    scope = LONGEST
    schedule_id = "s" + WIDE * 199
    schedules.create(scope, schedule_id, Every(timedelta(minutes=1), anchor=T0),
                     schedule_targets.report.target(payload={"n": 1}))
    clock.set(T0 + timedelta(minutes=2))
    run_pass(clock)
    produced = schedules.produced_work(scope, schedule_id)
    assert len(produced) >= 1
    definition = registry.define("rvstore.longest", "v" + WIDE * 199, safety="idempotent")
    try:
        command, key = "c" + WIDE * 199, "k" + WIDE * 199
        accepted = work.enqueue(scope, definition.request(
            command=command, idempotency_key=key, payload={}))
        again = work.enqueue(scope, definition.request(
            command=command, idempotency_key=key, payload={}))
        assert accepted.created and not again.created
        assert again.work_id == accepted.work_id
        info = work.get(scope, accepted.work_id)
        assert (info.command_id, info.idempotency_key) == (command, key)
        assert accepted.work_id in {w.work_id for w in work.list(scope)}
    finally:
        registry._unregister(definition.name, definition.version)
        leave_transaction_forms()
    with connection.cursor() as cur:
        cur.execute("select count(*) from durable_schedule_scope where scope_id = %s", (scope,))
        assert cur.fetchone()[0] == 1
