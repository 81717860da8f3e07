"""Review rvops: ``durable_status`` names what suspended Work needs by its suspension reason
(docs/work.md "Suspension reasons"): it said "needs proof" for every suspended Work, also for
Work suspended because its definition is not deployed, whose fix is a deploy and a resume
(a proof there records an effect nobody judged)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from tests.admin.conftest import seed_work
from tests.operations.test_health import status

pytestmark = pytest.mark.django_db


def suspend(work, reason):
    with connection.cursor() as cur:
        cur.execute("update durable_work set suspension_reason = %s where id = %s",
                    [reason, work["pk"]])
        cur.execute("delete from durable_work_dispatch")  # suspended Work has none


def test_status__each_suspended_work_reason_with_its_own_fix(clock):
    call_command("durable_partitions", stdout=StringIO())
    for scope, reason in (("tenant-a", "unknown_definition"), ("tenant-b", "unknown_definition"),
                          ("tenant-a", "reconciliation_unknown"),
                          ("tenant-b", "reconciler_missing")):
        suspend(seed_work(scope, state="suspended", permits=(None,)), reason)
    code, report = status("--json")
    assert code == 1
    assert report["suspended_work"] == {"unknown_definition": 2, "reconciliation_unknown": 1,
                                        "reconciler_missing": 1}
    assert report["work_by_state"]["suspended"] == 4
    work_problems = [p for p in report["problems"] if "Work suspended" in p]
    assert work_problems == [
        "1 Work suspended (needs proof)",
        "2 Work suspended (unknown_definition: deploy its definition, then resume it)",
        "1 Work suspended (reconciler_missing: deploy its reconciler and resume it, or record "
        "proof)",
    ]
    code, text = status()
    assert code == 1
    assert "problem: 2 Work suspended (unknown_definition: deploy its definition, then " \
           "resume it)" in text
