"""The health dashboard names a suspension's evidence code and short reason beside its reason:
a cron schedule quarantined because its zone vanished from the tz database reads
``unevaluable (DS160 tz_unavailable)``, not a bare ``unevaluable``."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.admin.conftest import seed_schedule

pytestmark = pytest.mark.django_db
URL = "/admin/durable_schedule/runnerheartbeat/"


def test_dashboard__shows_the_evidence_code_and_reason_of_a_quarantine(client, superuser, clock):
    seed_schedule("tenant-a", "berlin", state="suspended", reason="unevaluable")
    seed_schedule("tenant-a", "jumped", state="suspended", reason="clock_jump")
    with connection.cursor() as cur:
        cur.execute(
            "update durable_schedule_definition set suspension_evidence ="
            ' \'{"code": "DS160", "context": {"reason": "tz_unavailable", "tz": "Europe/Berlin"}}\''
            " where schedule_id = 'berlin'"
        )
    client.force_login(superuser)
    body = client.get(URL).content.decode()
    assert "<td>unevaluable (DS160 tz_unavailable)</td>" in body
    assert "<td>clock_jump</td>" in body  # evidence without a code: the reason alone
