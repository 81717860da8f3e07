"""The dashboard offers a suspended schedule's fix as a link only to a user who can open it:
the operation pages need the operation's permission and the view permission on schedules, the
detail page the view permission. A staff user with the release permission alone sees the fix
named in words, and no link that answers 403."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.admin.conftest import _user, seed_schedule

pytestmark = pytest.mark.django_db
URL = "/admin/durable_schedule/runnerheartbeat/"
RELEASE = reverse("admin:durable_schedule_scheduledefinition_operate", args=["release"])


def test_dashboard__no_release_link_for_a_user_with_the_release_permission_alone(
        client, django_user_model, clock, scoped_users):
    epoch = seed_schedule("tenant-a", "after-restore", state="suspended",
                          reason="runtime_epoch_mismatch")
    user = _user(django_user_model, "releaser",
                 codenames=("view_runnerheartbeat", "release_schedule"))
    scoped_users[user.get_username()] = ["tenant-a"]
    client.force_login(user)
    body = client.get(URL).content.decode()
    assert "after-restore" in body
    assert "Release after recovery…" not in body and RELEASE not in body
    assert "needs release after recovery" in body
    detail = reverse("admin:durable_schedule_scheduledefinition_change", args=[epoch["pk"]])
    assert detail not in body  # the detail page needs the view permission too
    # What the dashboard no longer offers is indeed closed to this user.
    assert client.get(f"{RELEASE}?ids={epoch['pk']}&scope=tenant-a").status_code == 403
    assert client.get(detail + "?scope=tenant-a").status_code == 403


def test_dashboard__the_release_link_with_release_and_view_permissions_opens(
        client, django_user_model, clock, scoped_users):
    epoch = seed_schedule("tenant-a", "after-restore", state="suspended",
                          reason="runtime_epoch_mismatch")
    user = _user(django_user_model, "operator-1", codenames=(
        "view_runnerheartbeat", "release_schedule", "view_scheduledefinition"))
    scoped_users[user.get_username()] = ["tenant-a"]
    client.force_login(user)
    body = client.get(URL).content.decode()
    link = f"{RELEASE}?ids={epoch['pk']}&scope=tenant-a"
    assert f'href="{link.replace("&", "&amp;")}' in body
    assert client.get(link).status_code == 200


def test_dashboard__no_reissue_link_without_the_view_permission(client, django_user_model,
                                                                clock, scoped_users):
    seed_schedule("tenant-a", "jumped", state="suspended", reason="clock_jump")
    user = _user(django_user_model, "reissuer",
                 codenames=("view_runnerheartbeat", "reissue_schedule"))
    scoped_users[user.get_username()] = ["tenant-a"]
    client.force_login(user)
    body = client.get(URL).content.decode()
    reissue = reverse("admin:durable_schedule_scheduledefinition_operate", args=["reissue"])
    assert "jumped" in body and reissue not in body
    assert "Re-issue as a new generation…" not in body
