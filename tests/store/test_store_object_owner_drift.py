"""The migration owner owns every store object; the runtime roles only execute or read what
they are granted (docs/security.md "The clock seam": "the runtime roles can execute it but never
replace it"). Ownership is no grant, so the drift check never saw it: after ``ALTER FUNCTION
durable_schedule_clock(text) OWNER TO durable_runtime`` the runtime, as the real role, drops
the clock seam (every claim and acceptance then fails), re-grants it to ``PUBLIC`` and alters
its settings, and ``manage.py check`` was silent. A store function, table or type owned by
either role is reported now (``durable_schedule.E003``, DS304). Rolled back with the test."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule.store import inspection
from tests.pgroles import RUNTIME, become, refused

pytestmark = pytest.mark.django_db


def _problems() -> list[str]:
    with connection.cursor() as cur:
        return inspection.grant_problems(cur)


def test_a_runtime_owning_the_clock_seam__drops_it_and_hands_it_out(pg):
    with pg.cursor() as cur:
        become(cur, RUNTIME)
        assert refused(pg, "drop function durable_schedule_clock(text)") is not None
        cur.execute("reset role")
        cur.execute("alter function durable_schedule_clock(text) owner to durable_runtime")
        become(cur, RUNTIME)
    assert refused(pg, "grant execute on function durable_schedule_clock(text) to public") is None
    assert refused(pg, "alter function durable_schedule_clock(text) set statement_timeout = 1"
                   ) is None
    assert refused(pg, "drop function durable_schedule_clock(text)") is None


@pytest.mark.parametrize("statement, reported", [
    ("alter function durable_schedule_clock(text) owner to durable_runtime",
     "function durable_schedule_clock(text) is owned by durable_runtime"),
    ("alter function ensure_schedule_history_partitions() owner to durable_runtime",
     "function ensure_schedule_history_partitions() is owned by durable_runtime"),
    ("alter function claim_work_dispatch(text, interval, integer, text[]) owner to "
     "durable_runtime",
     "function claim_work_dispatch(text,interval,integer,text[]) is owned by durable_runtime"),
    ("alter type durable_schedule_accept_row owner to durable_runtime",
     "type durable_schedule_accept_row is owned by durable_runtime"),
    # Run by the owner after every migrate: its settings would be the runtime's to choose.
    ("alter function durable_schedule_revoke_public_execute() owner to durable_runtime",
     "function durable_schedule_revoke_public_execute() is owned by durable_runtime"),
])
def test_check__reports_a_store_object_owned_by_a_runtime_role(statement, reported):
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute(statement)
    problems = _problems()
    assert any(reported in p and "OWNER TO <migration owner>" in p for p in problems), problems
