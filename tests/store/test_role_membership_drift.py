"""The two NOLOGIN roles are members of no role: the contract grants them none
(docs/security.md "Roles"). A membership makes the role take on the other role's privileges
*and its row-level security policies* (a policy ``TO role`` applies to its members), which no
table or column grant of the drift check shows: ``GRANT durable_dispatcher TO durable_runtime``
lets the runtime, in one scope, read every scope's dispatch rows through the dispatcher's
``USING (true)`` policy, and it was reported by nobody. The check reports every membership of
either role (``durable_schedule.E003``, DS304), at every schema."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule.store import inspection
from tests.pgroles import RUNTIME, become
from tests.store.seed import seed_scope

pytestmark = pytest.mark.django_db


def _problems() -> list[str]:
    with connection.cursor() as cur:
        return inspection.grant_problems(cur)


def test_a_runtime_member_of_the_dispatcher__reads_every_scopes_dispatch_rows(pg):
    # Why it matters (PostgreSQL's rule, shown on the real roles): the membership widens RLS.
    with pg.cursor() as cur:
        a, b = seed_scope(cur, "tenant-a"), seed_scope(cur, "tenant-b")
        cur.execute("grant durable_dispatcher to durable_runtime")
        become(cur, RUNTIME, "tenant-a")
        cur.execute("select scope_routing_id, schedule_id, due_at from durable_schedule_dispatch")
        seen = {r[0] for r in cur.fetchall()}
    assert seen == {a["routing_id"], b["routing_id"]}


@pytest.mark.parametrize("statement, role, member_of", [
    ("grant durable_dispatcher to durable_runtime", "durable_runtime", "durable_dispatcher"),
    ("create role ds_probe_membership nologin; "
     "grant ds_probe_membership to durable_dispatcher",
     "durable_dispatcher", "ds_probe_membership"),
    ("create role ds_probe_membership nologin bypassrls; "
     "grant ds_probe_membership to durable_runtime", "durable_runtime", "ds_probe_membership"),
])
def test_check__reports_a_membership_of_either_role(statement, role, member_of):
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute(statement)
    problems = _problems()
    assert any(role in p and member_of in p and "member" in p for p in problems), problems


def test_check__the_owners_membership_in_the_roles_is_the_contract():
    # The owner (or the DBA's migration user) is a member *of* both roles: that is how it
    # enters them with SET LOCAL ROLE, and it is not reported.
    with connection.cursor() as cur:
        cur.execute("create role ds_probe_owner nologin; "
                    "grant durable_runtime, durable_dispatcher to ds_probe_owner")
    assert _problems() == []


@pytest.mark.parametrize("function, definer", [
    ("claim_schedule_dispatch(text, interval, integer)", True),
    # SECURITY INVOKER: it runs with the runtime's own privileges, so it widens nothing.
    ("durable_schedule_enter_routed(bigint)", False),
])
def test_check__reports_a_definer_function_the_runtime_may_execute_beyond_its_contract(
        function, definer):
    # claim_schedule_dispatch is SECURITY DEFINER: executable by the runtime it claims any
    # scope's schedules for it, the dispatcher's surface. Only its contract's definer
    # functions (claim_work_dispatch, durable_runner_beat) are the runtime's.
    assert _problems() == []
    with connection.cursor() as cur:
        cur.execute("select prosecdef from pg_proc where oid = %s::regprocedure", [function])
        assert cur.fetchone()[0] is definer
        cur.execute(f"grant execute on function {function} to durable_runtime")
    problems = _problems()
    reported = any("durable_runtime may EXECUTE" in p and function.split("(")[0] in p
                   for p in problems)
    assert reported == definer, problems
