"""Issue 6 items 1 and 4: the read-only pages list what operators need, and a schedule's
detail page shows its timeline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from tests.admin.conftest import T0, seed_occurrence, seed_schedule, seed_work

pytestmark = pytest.mark.django_db

MODELS = ("scheduledefinition", "schedulegeneration", "occurrence", "scheduledispatch",
          "schedulehistory", "scope", "work", "workpermit", "workquarantine", "workhistory",
          "workdispatch")


def changelist(model):
    return reverse(f"admin:durable_schedule_{model}_changelist")


def change(model, pk):
    return reverse(f"admin:durable_schedule_{model}_change", args=[pk])


def row_scope(row) -> str:
    """The scope of a change list row (dispatch rows carry it as an annotation)."""
    return getattr(row, "scope_name", None) or row.scope_id


@pytest.mark.parametrize("model", MODELS)
def test_changelist__superuser_sees_both_scopes(client, superuser, two_scopes, model):
    client.force_login(superuser)
    response = client.get(changelist(model))
    assert response.status_code == 200
    assert {row_scope(r) for r in response.context["cl"].result_list} == {"tenant-a",
                                                                        "tenant-b"}


def test_schedule_list__shows_kind_state_next_due_lateness_reason(client, superuser, clock):
    # Cursor at T0-5h with an hourly grid from T0-5h: next due T0-4h, 4 hours late at T0.
    seed_schedule("tenant-a", "hourly", accepted_at=T0 - timedelta(hours=5))
    seed_schedule("tenant-a", "stuck", state="suspended", reason="clock_jump",
                  accepted_at=T0 - timedelta(minutes=30))
    client.force_login(superuser)
    response = client.get(changelist("scheduledefinition"))
    rows = {r.schedule_id: r for r in response.context["cl"].result_list}
    assert rows["hourly"].gen_kind == "every"
    body = response.content.decode()
    assert "2030-01-01 08:00:00" in body
    assert "4 h" in body
    assert "clock_jump" in body


def test_schedule_list__filters_by_state_and_reason_and_searches_ids(client, superuser, clock):
    seed_schedule("tenant-a", "hourly")
    seed_schedule("tenant-a", "stuck", state="suspended", reason="clock_jump")
    seed_schedule("tenant-b", "other", state="suspended", reason="runtime_epoch")
    client.force_login(superuser)

    def ids(query):
        response = client.get(changelist("scheduledefinition") + query)
        assert response.status_code == 200
        return sorted(r.schedule_id for r in response.context["cl"].result_list)

    assert ids("?state=suspended") == ["other", "stuck"]
    assert ids("?suspension_reason=clock_jump") == ["stuck"]
    assert ids("?q=tenant-b") == ["other"]
    assert ids("?q=hour") == ["hourly"]


def test_occurrence_list__filters_by_state_and_kind(client, superuser, clock):
    seed_schedule("tenant-a", "s")
    seed_occurrence("tenant-a", "s", T0 - timedelta(hours=3), state="materialized")
    seed_occurrence("tenant-a", "s", T0 - timedelta(hours=2), state="pending", kind="coalesced")
    client.force_login(superuser)
    response = client.get(changelist("occurrence") + "?kind=coalesced")
    assert [o.state for o in response.context["cl"].result_list] == ["pending"]
    response = client.get(changelist("occurrence") + "?state=materialized")
    assert [o.kind for o in response.context["cl"].result_list] == ["nominal"]


def test_work_list__shows_attempts_eligibility_deadline_and_closure(client, superuser, clock):
    seed_work("tenant-a", state="expired", attempt=3, closed_reason="deadline")
    seed_work("tenant-a", state="pending", attempt=1)
    client.force_login(superuser)
    response = client.get(changelist("work") + "?execution_admission_closed_reason=deadline")
    [work] = response.context["cl"].result_list
    assert work.attempt == 3
    body = response.content.decode()
    for column in ("attempt", "next eligibility", "execution deadline",
                   "execution admission closed at",
                   "execution admission closed reason", "execution deadline reached at"):
        assert column in body.lower().replace("_", " ")
    pending = client.get(changelist("work") + "?state=pending")
    assert "Jan. 1, 2030, noon" in pending.content.decode(), "a pending Work shows its due time"


def test_work_search__by_work_id(client, superuser, clock):
    first = seed_work("tenant-a")
    seed_work("tenant-a")
    client.force_login(superuser)
    response = client.get(changelist("work") + f"?q={first['work_id']}")
    assert [w.pk for w in response.context["cl"].result_list] == [first["pk"]]


def test_permit_list__filters_unresolved(client, superuser, clock):
    seed_work("tenant-a", state="suspended", permits=("succeeded", None))
    client.force_login(superuser)
    response = client.get(changelist("workpermit") + "?outcome=__none__")
    assert [p.permit_no for p in response.context["cl"].result_list] == [2]


def test_schedule_detail__shows_timeline(client, superuser, clock):
    schedule = seed_schedule("tenant-a", "hourly", generations=2,
                             accepted_at=T0 - timedelta(hours=5))
    occurrence = seed_occurrence("tenant-a", "hourly", T0 - timedelta(hours=4), generation=2)
    work = seed_work("tenant-a", state="running", occurrence=occurrence, attempt=1)
    client.force_login(superuser)
    response = client.get(change("scheduledefinition", schedule["pk"]))
    assert response.status_code == 200
    timeline = response.context["timeline"]
    assert [g.generation for g in timeline["generations"]] == [2, 1]
    [row] = timeline["occurrences"]
    assert row.work.pk == work["pk"]
    assert timeline["cursor"] == T0 - timedelta(hours=5)
    assert timeline["next_due"] == T0 - timedelta(hours=4)
    assert timeline["lateness"] == "4 h"
    body = response.content.decode()
    assert 'id="generations"' in body and 'id="occurrences"' in body
    assert str(work["work_id"]) in body and "running" in body
    assert "2030-01-01 08:00:00.000000 UTC" in body


def test_work_detail__shows_permits_quarantine_history_and_origin(client, superuser,
                                                                  two_scopes):
    work = two_scopes["tenant-a"]["work"]
    client.force_login(superuser)
    response = client.get(change("work", work["pk"]))
    assert response.status_code == 200
    t = response.context["work_timeline"]
    assert [p.permit_no for p in t["permits"]] == [1, 2]
    assert t["unresolved_permit"].permit_no == 2
    assert [q.reason for q in t["quarantine"]] == ["late_result"]
    assert t["source_schedule"].schedule_id == "nightly-a"
