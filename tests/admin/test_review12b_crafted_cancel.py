"""Crafted POSTs of the Work cancel operation (now also a change list action): another scope's
row, an id that does not exist, staff with only the view permission, staff with the cancel
permission but not the view permission on Work. Each changes nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from durable_schedule.store.models import Work
from tests.admin.conftest import VIEW_CODENAMES, _user, seed_work
from tests.admin.test_actions import messages_of, token_from

pytestmark = pytest.mark.django_db
URL = reverse("admin:durable_schedule_work_operate", args=["cancel_work"])


def post(client, *pks, extra=""):
    ids = ",".join(str(p) for p in pks)
    return client.post(f"{URL}?ids={ids}{extra}", {"ids": ids, "confirm": "on"}, follow=True)


def states(*works):
    return [Work.objects.get(pk=w["pk"]).state for w in works]


def test_crafted__another_scopes_row_and_a_missing_id_are_left_alone(
    client, django_user_model, scoped_users, clock
):
    mine, theirs = seed_work("tenant-a"), seed_work("tenant-b")
    user = _user(django_user_model, "ops-a", codenames=VIEW_CODENAMES + ("cancel_work",))
    scoped_users["ops-a"] = ["tenant-a"]
    client.force_login(user)
    done = post(client, mine["pk"], theirs["pk"], 999_999_999)
    said = messages_of(done)
    assert said[0] == "2 selected row(s) were not found in your scopes and were left alone."
    assert said[1] == f"tenant-a/{mine['work_id']}: now canceled."
    assert len(said) == 2 and str(theirs["work_id"]) not in "".join(said)
    assert states(mine, theirs) == ["canceled", "pending"]
    # Naming the other scope outright is refused before anything is read.
    assert post(client, theirs["pk"], extra="&scope=tenant-b").status_code == 403
    assert states(theirs) == ["pending"]


@pytest.mark.parametrize(
    "codenames", [VIEW_CODENAMES, ("cancel_work",)], ids=["view-only", "cancel-without-view"]
)
def test_crafted__without_both_permissions_is_forbidden(
    client, django_user_model, settings, clock, codenames
):
    settings.DURABLE_SCHEDULE = {
        "ADMIN_SCOPES": "durable_schedule.admin.scoping.all_scopes_for_staff"
    }
    work = seed_work("tenant-a")
    client.force_login(_user(django_user_model, "staff", codenames=codenames))
    assert client.get(f"{URL}?ids={work['pk']}").status_code == 403
    assert post(client, work["pk"]).status_code == 403
    assert states(work) == ["pending"]


def test_crafted__a_post_without_the_confirmation_tick_changes_nothing(
    csrf_client, superuser, clock
):
    work = seed_work("tenant-a")
    csrf_client.force_login(superuser)
    page = csrf_client.get(f"{URL}?ids={work['pk']}")
    again = csrf_client.post(
        f"{URL}?ids={work['pk']}", {"csrfmiddlewaretoken": token_from(page), "ids": str(work["pk"])}
    )
    assert again.status_code == 200 and again.context["form"].errors
    assert states(work) == ["pending"]
