"""The admin offers Cancel exactly where ``work.cancel`` allows it: pending or suspended Work,
and running Work whose lease has ended by the database clock (tests/work/
test_operator_cancel.py); running Work under a live lease is not offered and, when posted
anyway, is refused with the API's DS217. The bulk action over a mixed selection says per row,
before and after, what is canceled, what is unchanged and what is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from durable_schedule.store.models import Work, WorkHistory
from tests.admin.conftest import seed_work
from tests.admin.test_actions import messages_of, token_from
from tests.conftest import T0

pytestmark = pytest.mark.django_db
MIN = timedelta(minutes=1)
OPERATE = "admin:durable_schedule_work_operate"
CHANGE = "admin:durable_schedule_work_change"
CHANGELIST = "admin:durable_schedule_work_changelist"


def running(scope="tenant-a", lease_end=T0 + MIN):
    """Running Work whose attempt 1 is an admitted, unresolved permit, leased until lease_end."""
    work = seed_work(scope, state="pending", permits=(None,))
    with connection.cursor() as cur:
        cur.execute(
            "update durable_work set state = 'running', lease_owner = 'w1', "
            "lease_expires_at = %s, lease_generation = 1, attempt_started_at = %s "
            "where id = %s",
            [lease_end, T0, work["pk"]],
        )
        cur.execute(
            "update durable_work_dispatch set lease_owner = 'w1', lease_expires_at = %s,"
            " lease_generation = 1 where work_ref = %s",
            [lease_end, work["pk"]],
        )
    return work


def offered(client, work):
    page = client.get(reverse(CHANGE, args=[work["pk"]]))
    assert page.status_code == 200
    return [op["name"] for op in page.context["operations"]]


def state(work):
    return Work.objects.get(pk=work["pk"]).state


def test_detail__running_work_is_offered_cancel_once_its_lease_has_ended(client, superuser, clock):
    work = running()
    client.force_login(superuser)
    clock.set(T0 + MIN - timedelta(microseconds=1))
    assert "cancel_work" not in offered(client, work)  # the lease still holds
    clock.set(T0 + MIN)  # the lease end is exclusive, as in work.cancel
    assert "cancel_work" in offered(client, work)


def test_cancel__a_lapsed_running_work_is_canceled_from_its_page(csrf_client, superuser, clock):
    work = running()
    clock.set(T0 + 2 * MIN)
    csrf_client.force_login(superuser)
    url = reverse(OPERATE, args=["cancel_work"]) + f"?ids={work['pk']}"
    page = csrf_client.get(url)
    assert "its lease has ended" in page.content.decode()
    done = csrf_client.post(
        url,
        {"csrfmiddlewaretoken": token_from(page), "ids": str(work["pk"]), "confirm": "on"},
        follow=True,
    )
    assert messages_of(done) == [f"tenant-a/{work['work_id']}: now canceled."]
    assert state(work) == "canceled"
    event = WorkHistory.objects.filter(work_id=work["work_id"]).latest("id")
    assert (event.event, event.actor) == ("canceled", "root")


def test_bulk_cancel__mixed_selection_says_what_changed_and_what_did_not(
    csrf_client, superuser, clock
):
    pending = seed_work("tenant-a", state="pending")
    lapsed = running(lease_end=T0 + MIN)
    live = running(lease_end=T0 + 10 * MIN)
    done_already = seed_work("tenant-a", state="succeeded")
    canceled = seed_work("tenant-a", state="canceled")
    clock.set(T0 + 2 * MIN)
    selection = [pending, lapsed, live, done_already, canceled]
    csrf_client.force_login(superuser)
    changelist = reverse(CHANGELIST)
    page = csrf_client.get(changelist)
    redirect = csrf_client.post(
        changelist,
        {
            "csrfmiddlewaretoken": token_from(page),
            "action": "cancel_selected_work",
            "_selected_action": [str(w["pk"]) for w in selection],
        },
    )
    assert redirect.status_code == 302
    confirm_page = csrf_client.get(redirect["Location"])
    verdicts = confirm_page.context["verdicts"]
    assert verdicts[pending["pk"]] == "will be canceled"
    assert verdicts[lapsed["pk"]].startswith("will be canceled: its lease has ended")
    assert verdicts[live["pk"]] == (
        "refused (DS217): running under a live lease until 2030-01-01 12:10:00 UTC"
    )
    assert verdicts[done_already["pk"]] == "refused (DS217): the Work is succeeded (terminal)"
    assert verdicts[canceled["pk"]] == "unchanged: already canceled"
    html = confirm_page.content.decode()
    assert "running under a live lease until" in html and "unchanged: already canceled" in html
    ids = ",".join(str(w["pk"]) for w in sorted(selection, key=lambda w: w["pk"]))
    done = csrf_client.post(
        redirect["Location"],
        {"csrfmiddlewaretoken": token_from(confirm_page), "ids": ids, "confirm": "on"},
        follow=True,
    )
    said = {m.split(":", 1)[0]: m.split(": ", 1)[1] for m in messages_of(done)}
    label = {w["pk"]: f"tenant-a/{w['work_id']}" for w in selection}
    assert said[label[pending["pk"]]] == "now canceled."
    assert said[label[lapsed["pk"]]] == "now canceled."
    assert said[label[live["pk"]]].startswith("refused — DS217")
    assert said[label[done_already["pk"]]].startswith("refused — DS217")
    assert said[label[canceled["pk"]]] == "unchanged, the Work was already canceled."
    assert [state(w) for w in selection] == [
        "canceled",
        "canceled",
        "running",
        "succeeded",
        "canceled",
    ]


def test_bulk_cancel__needs_the_cancel_permission(client, viewer, clock):
    work = seed_work("tenant-a", state="pending")
    client.force_login(viewer)
    page = client.get(reverse(CHANGELIST))
    form = page.context["action_form"]  # None: no action offered at all
    assert form is None or "cancel_selected_work" not in dict(form.fields["action"].choices)
    response = client.post(
        reverse(CHANGELIST),
        {"action": "cancel_selected_work", "_selected_action": [str(work["pk"])]},
    )
    assert response.status_code in (200, 302)
    assert state(work) == "pending"
