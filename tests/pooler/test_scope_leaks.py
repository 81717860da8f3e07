"""Nothing of a scope or role survives a transaction on a pooled connection (docs/security.md:
every setting is transaction-local), tested through a real PgBouncer in transaction mode with a
single server connection, so the next client is handed the very server session the first one
used: after successful, refused and rolled-back calls of the public API, neither the process
that made them nor the next client of that server session runs as the runtime role or sees a
scope or routing id set."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import database_url
from tests.pooler.test_pgbouncer import manage

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]

STATE = ("select current_user::text, session_user::text, current_setting('role'),"
         " coalesce(current_setting('durable_schedule.scope_id', true), ''),"
         " coalesce(current_setting('durable_schedule.routing_id', true), ''),"
         " pg_backend_pid()")

SCRIPT = f"STATE = {STATE!r}\n" + """
import uuid
from django.db import connection, transaction
from demo.work import touch
from durable_schedule import schedules, work
from durable_schedule.errors import DurableError

def state():
    with connection.cursor() as cur:
        cur.execute(STATE)
        return cur.fetchone()

own = state()
assert own[0] == own[1] and own[2] == "none" and own[3] == own[4] == "", own

def clean(step):
    # Inside the caller's transaction the role is put back as "SET LOCAL ROLE <own role>"
    # (current_user is the own role again); between transactions nothing is left at all.
    now = state()
    inside = connection.in_atomic_block
    assert (now[:2], now[3:5]) == (own[:2], own[3:5]), (step, now, own)
    assert inside or now[2] == "none", (step, now, own)

def refused(call):
    try:
        call()
    except DurableError:
        return
    raise SystemExit("expected a refusal")

touch.enqueue(scope="tenant-a", command="c", idempotency_key="k", payload={})
clean("accepted")
refused(lambda: touch.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                              payload={"other": 1}))
clean("idempotency conflict")
refused(lambda: schedules.get("tenant-a", "missing"))
clean("not found (scoped block raised)")
refused(lambda: work.record_proof("tenant-b", uuid.uuid4(), "applied", actor="ops"))
clean("write refused (scoped block raised)")
try:
    with transaction.atomic():
        work.list("tenant-a")
        touch.enqueue(scope="tenant-b", command="c2", idempotency_key="k2", payload={})
        clean("inside the caller's atomic block")
        raise RuntimeError("roll back")
except RuntimeError:
    pass
clean("after the caller's rollback")
with transaction.atomic():
    refused(lambda: touch.enqueue(scope="tenant-a", command="c", idempotency_key="k",
                                  payload={"other": 2}))
    clean("conflict inside the caller's atomic block")
    assert [w.command_id for w in work.list("tenant-a")] == ["c"]
    clean("read inside the caller's atomic block")
print("pid", state()[5])
"""


def test_pooled_session__keeps_no_role_or_scope_after_the_apis_transactions(one_server):
    done = manage(one_server, "shell", "-c", SCRIPT, DURABLE_PREPARE_STATEMENTS="0")
    assert done.returncode == 0, done.stdout + done.stderr
    pid = int(done.stdout.split("pid", 1)[1].split()[0])
    with psycopg.connect(one_server, autocommit=True) as conn:
        user, session, role, scope, routing, backend = conn.execute(STATE).fetchone()
        assert backend == pid  # the same server session, handed to the next client
        assert (user, role, scope, routing) == (session, "none", "", "")
        # And RLS admits nothing of either tenant to the next client's runtime role.
        with conn.transaction():
            conn.execute("set local role durable_runtime")
            assert conn.execute("select count(*) from durable_work").fetchone() == (0,)
    with psycopg.connect(database_url(), autocommit=True) as direct:
        assert direct.execute("select scope_id, command_id from durable_work order by 1"
                              ).fetchall() == [("tenant-a", "c")]
