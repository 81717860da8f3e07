"""The dispatcher may read the routing columns of ``durable_schedule_dispatch`` and nothing
else (docs/security.md "Roles"); the drift check reports "any privilege of the dispatcher on a
table". A *column* grant is no table privilege, so the table-wide comparison never saw one: a
``GRANT SELECT (scope_id, payload) ON durable_work TO durable_dispatcher`` (or to ``PUBLIC``,
which the dispatcher inherits) was silent, and with it the dispatcher, setting a scope as any
role may, read that scope's payloads. Each drift below is reported now, and the first one is
shown to be a real leak as the real role. Made in the test's own transaction, rolled back."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from tests.pgroles import DISPATCHER, become
from tests.store.seed import seed_scope

pytestmark = pytest.mark.django_db

DRIFTS = {
    "payload": ("grant select (scope_id, payload) on durable_work to durable_dispatcher",
                "durable_dispatcher has unexpected SELECT (payload) on durable_work"),
    "public_payload": ("grant select (payload) on durable_work to public",
                       "durable_dispatcher has unexpected SELECT (payload) on durable_work"),
    "work_dispatch": ("grant select (work_ref) on durable_work_dispatch to durable_dispatcher",
                      "durable_dispatcher has unexpected SELECT (work_ref) on "
                      "durable_work_dispatch"),
    "update_due_at": ("grant update (due_at) on durable_schedule_dispatch to durable_dispatcher",
                      "durable_dispatcher has unexpected UPDATE (due_at) on "
                      "durable_schedule_dispatch"),
    "history_partition": ("grant select (scope_id) on durable_schedule_history_default to "
                          "durable_dispatcher",
                          "durable_dispatcher has unexpected SELECT (scope_id) on "
                          "durable_schedule_history_default"),
}


def problems() -> list[str]:
    return [m.msg for m in checks.run_checks() if m.id == "durable_schedule.E003"]


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_check__reports_a_column_grant_to_the_dispatcher(drift):
    statement, expected = DRIFTS[drift]
    with connection.cursor() as cur:
        cur.execute(statement)
    found = problems()
    assert any(expected in m for m in found), found


def test_the_reported_column_grant__lets_the_real_dispatcher_read_a_tenants_payload(pg):
    # Why it must be reported: the dispatcher role itself reads another tenant's payload.
    with pg.cursor() as cur:
        seed_scope(cur, "tenant-b")
        cur.execute("grant select (scope_id, payload) on durable_work to durable_dispatcher")
        become(cur, DISPATCHER, "tenant-b")
        cur.execute("select scope_id, payload from durable_work")
        assert [r[0] for r in cur.fetchall()] == ["tenant-b"]


def test_check__the_contracts_dispatcher_columns_are_silent():
    assert problems() == []
