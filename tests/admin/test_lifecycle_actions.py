"""Issue 14 items 1-3 and 10 in the admin: pause, resume, run now and the repair of each
suspension reason, each behind its own permission, through the public API; the detail page
offers only the action that fixes the row's state or reason (never one that will be refused)."""

from __future__ import annotations

import pytest
from demo import schedule_targets
from django.urls import reverse

from durable_schedule import schedules
from durable_schedule.store.models import ScheduleDefinition
from tests.admin.test_actions import (
    confirm,
    messages_of,
    operate_url,
    revisions_from,
    state,
    token_from,
)
from tests.schedules.conftest import SCOPE, T0, TEN, works

pytestmark = pytest.mark.django_db
CHANGE = "admin:durable_schedule_scheduledefinition_change"


def make(schedule_id: str, **kwargs) -> int:
    target = schedule_targets.report.target(payload={"report": schedule_id})
    schedules.create(SCOPE, schedule_id, schedules.Every(TEN), target, **kwargs)
    return ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id=schedule_id).pk


def suspend_for(pk: int, reason: str) -> None:
    """Give the schedule a protocol suspension reason as the processor would record it."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("update durable_schedule_definition set state = 'suspended',"
                    " suspension_reason = %s, suspension_evidence = '{}', suspended_at = now(),"
                    " revision = revision + 1 where id = %s", [reason, pk])


def offered(client, pk) -> list[str]:
    return [op["name"] for op in client.get(reverse(CHANGE, args=[pk])).context["operations"]]


def test_pause_then_resume__from_the_admin_keeps_the_grid(csrf_client, superuser, clock):
    pk = make("s")
    csrf_client.force_login(superuser)
    assert "pause" in offered(csrf_client, pk) and "resume" not in offered(csrf_client, pk)
    response = confirm(csrf_client, "pause", pk, data={"note": "provider maintenance"})
    [message] = messages_of(response)
    assert "paused" in message
    row = ScheduleDefinition.objects.get(pk=pk)
    assert (row.state, row.paused_by, row.pause_note) == ("paused", "root",
                                                          "provider maintenance")
    assert offered(csrf_client, pk) == ["resume", "trigger", "delete"]
    clock.set(T0 + 3 * TEN + TEN // 2)  # 12:35: 12:10 .. 12:30 skipped
    response = confirm(csrf_client, "resume", pk, data={"catch_up": "skip"})
    [message] = messages_of(response)
    assert "resumed" in message and "2030-01-01 12:40:00 UTC" in message
    assert state(pk)[0] == "active"


def test_trigger__from_the_admin_posting_the_page_twice_runs_once(csrf_client, superuser,
                                                                  clock):
    pk = make("s")
    csrf_client.force_login(superuser)
    page = csrf_client.get(operate_url("trigger", pk))
    token = token_from(page)
    request_id = page.context["form"].initial["request_id"]
    data = {"csrfmiddlewaretoken": token, "ids": str(pk), "request_id": request_id,
            **revisions_from(page)}
    first = csrf_client.post(operate_url("trigger", pk), data, follow=True)
    second = csrf_client.post(operate_url("trigger", pk), data, follow=True)
    assert "running now" in messages_of(first)[0]
    assert "already run for this request" in messages_of(second)[0]
    assert len(works()) == 1


@pytest.mark.parametrize(("reason", "fix"), [
    ("runtime_epoch_mismatch", "release"),
    ("clock_jump", "reissue"),
    ("unevaluable", "reissue"),
    ("scope_generation_mismatch", "reissue"),
    ("operator", "reissue"),
])
def test_repair__each_suspension_reason_offers_its_one_fix(csrf_client, superuser, clock,
                                                          reason, fix):
    pk = make("s")
    suspend_for(pk, reason)
    csrf_client.force_login(superuser)
    ops = offered(csrf_client, pk)
    assert [op for op in ops if op in ("release", "reissue")] == [fix]
    assert "pause" not in ops and "trigger" not in ops


def test_reissue__shows_the_next_instants_and_makes_a_new_generation(csrf_client, superuser,
                                                                    clock):
    pk = make("s")
    suspend_for(pk, "clock_jump")
    clock.set(T0 + TEN + TEN // 2)
    csrf_client.force_login(superuser)
    page = csrf_client.get(operate_url("reissue", pk))
    html = page.content.decode()
    assert "every 10 min" in html
    # A new generation is accepted now (12:15) with the default anchor: 12:25, 12:35, ...
    assert "2030-01-01 12:25:00 UTC" in html and "2030-01-01 12:35:00 UTC" in html
    response = confirm(csrf_client, "reissue", pk)
    [message] = messages_of(response)
    assert "re-issued as generation 2, now active" in message
    assert "2030-01-01 12:25:00 UTC" in message


# ---------------------------------------------------------------- admin polish (item 10)
def test_work_cancel__from_the_admin_is_offered_for_pending_work_and_cancels_it(
        csrf_client, superuser, clock):
    from durable_schedule.store.models import Work
    from tests.admin.conftest import seed_work

    pending = seed_work("tenant-a", state="pending")
    pending_row = Work.objects.get(pk=pending["pk"])
    csrf_client.force_login(superuser)
    detail = csrf_client.get(reverse("admin:durable_schedule_work_change", args=[pending["pk"]]))
    assert [op["name"] for op in detail.context["operations"]] == ["cancel_work"]
    assert detail.context["title"] == f"{pending_row.work_name}@{pending_row.work_version}"
    assert detail.context["subtitle"] == str(pending["work_id"])
    url = reverse("admin:durable_schedule_work_operate", args=["cancel_work"])
    url += f"?ids={pending['pk']}"
    page = csrf_client.get(url)
    assert "I understand that canceling is terminal" in page.content.decode()
    done = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                  "ids": str(pending["pk"]), "confirm": "on"}, follow=True)
    assert "now canceled." in messages_of(done)[0]
    assert Work.objects.get(pk=pending["pk"]).state == "canceled"


def test_work_resume__is_offered_only_for_a_missing_definition(csrf_client, superuser, clock):
    from tests.admin.conftest import seed_work

    proof = seed_work("tenant-a", state="suspended", permits=(None,))  # needs proof, not resume
    csrf_client.force_login(superuser)
    detail = csrf_client.get(reverse("admin:durable_schedule_work_change", args=[proof["pk"]]))
    assert "resume_work" not in [op["name"] for op in detail.context["operations"]]


def test_schedule_list__reads_the_spec_and_shows_no_lateness_while_paused(client, superuser,
                                                                         clock):
    make("s")
    schedules.pause(SCOPE, "s", "x")
    clock.set(T0 + 5 * TEN)
    client.force_login(superuser)
    html = client.get(reverse("admin:durable_schedule_scheduledefinition_changelist")).content
    row = html.decode().split('class="field-schedule_id"')[1].split("</tr>")[0]
    assert "every 10 min" in row and "paused" in row
    assert 'class="field-lateness">—' in row


def test_plural_names__read_as_english():
    from durable_schedule.store.models import ScheduleDispatch, WorkDispatch

    assert ScheduleDispatch._meta.verbose_name_plural == "schedule dispatches"
    assert WorkDispatch._meta.verbose_name_plural == "work dispatches"
