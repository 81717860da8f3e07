"""Issue 6 item 2: suspend, release after recovery and delete go through the public schedule
API, each behind its own permission, with the acting user in history and one message per row
(done, or refused with the diagnostic code). Django test client, CSRF checks enforced."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from durable_schedule.store.models import ScheduleDefinition, ScheduleHistory
from tests.admin.conftest import seed_schedule

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:durable_schedule_scheduledefinition_changelist"
OPERATE = "admin:durable_schedule_scheduledefinition_operate"


@pytest.fixture
def schedules(clock):
    """tenant-a: an active schedule, one suspended by a runtime-epoch fence, one suspended by
    an operator; tenant-b: an active schedule."""
    return {
        "active": seed_schedule("tenant-a", "active-1")["pk"],
        "fenced": seed_schedule("tenant-a", "fenced-1", state="suspended",
                                reason="runtime_epoch_mismatch")["pk"],
        "operator": seed_schedule("tenant-a", "paused-1", state="suspended",
                                  reason="operator")["pk"],
        "other": seed_schedule("tenant-b", "active-b")["pk"],
    }


def state(pk):
    row = ScheduleDefinition.objects.get(pk=pk)
    return row.state, row.revision


def history(pk):
    row = ScheduleDefinition.objects.get(pk=pk)
    return list(ScheduleHistory.objects.filter(scope_id=row.scope_id,
                                               schedule_id=row.schedule_id)
                .exclude(event="created").values_list("event", "actor"))


def operate_url(operation, *pks, scope=None):
    url = reverse(OPERATE, args=[operation]) + "?ids=" + ",".join(str(p) for p in pks)
    return url + (f"&scope={scope}" if scope else "")


def token_from(response) -> str:
    match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', response.content)
    assert match, "the confirmation page carries a CSRF token"
    return match.group(1).decode()


def revisions_from(page) -> dict[str, str]:
    """The per-row revisions the confirmation page posts (its hidden ``revision-<pk>`` inputs)."""
    found = re.findall(rb'name="(revision-\d+)" value="(\d+)"', page.content)
    return {name.decode(): value.decode() for name, value in found}


def confirm(client, operation, *pks, data=None, scope=None):
    """GET the confirmation page, then POST it with its token; returns the followed response."""
    url = operate_url(operation, *pks, scope=scope)
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    form = {"csrfmiddlewaretoken": token_from(page),
            "ids": ",".join(str(p) for p in pks), **(data or {})}
    revisions = {f"revision-{pk}": str(state(pk)[1]) for pk in pks}
    return client.post(url, {**revisions, **form}, follow=True)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


OPERATIONS = {
    "suspend": ("active", {"reason": "provider outage"}, ("suspended", "suspended")),
    "release": ("fenced", {}, ("active", "released")),
    "delete": ("active", {"confirm": "on"}, ("deleted", "deleted")),
}


# ---------------------------------------------------------------- superuser: done, audited
@pytest.mark.parametrize("operation", OPERATIONS)
def test_operation__superuser_calls_the_api_and_is_recorded_as_actor(
        csrf_client, superuser, schedules, operation):
    which, data, (new_state, event) = OPERATIONS[operation]
    pk = schedules[which]
    _, revision = state(pk)
    csrf_client.force_login(superuser)
    response = confirm(csrf_client, operation, pk, data=data)
    assert response.status_code == 200
    assert state(pk) == (new_state, revision + 1)
    assert history(pk) == [(event, "root")]
    [message] = messages_of(response)
    assert message.startswith("tenant-a/") and "refused" not in message


def test_suspend__records_the_operators_note_as_evidence(csrf_client, superuser, schedules):
    csrf_client.force_login(superuser)
    confirm(csrf_client, "suspend", schedules["active"], data={"reason": "provider outage"})
    row = ScheduleDefinition.objects.get(pk=schedules["active"])
    assert row.suspension_reason == "operator"
    assert row.suspension_evidence["note"] == "provider outage"
    assert row.suspension_evidence["actor"] == "root"


def test_suspend__without_a_reason_changes_nothing(csrf_client, superuser, schedules):
    csrf_client.force_login(superuser)
    before = state(schedules["active"])
    url = operate_url("suspend", schedules["active"])
    page = csrf_client.get(url)
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                      "ids": str(schedules["active"]), "reason": "  "})
    assert response.status_code == 200
    assert "This field is required" in response.content.decode()
    assert state(schedules["active"]) == before


def test_delete__needs_the_terminal_confirmation(csrf_client, superuser, schedules):
    csrf_client.force_login(superuser)
    before = state(schedules["active"])
    response = confirm(csrf_client, "delete", schedules["active"], data={})
    assert "This field is required" in response.content.decode()
    assert state(schedules["active"]) == before


# ---------------------------------------------------------------- refusals, per row
def test_release__of_an_operator_suspension_is_refused_with_its_code(csrf_client, superuser,
                                                                      schedules):
    csrf_client.force_login(superuser)
    before = state(schedules["operator"])
    response = confirm(csrf_client, "release", schedules["operator"], schedules["fenced"])
    assert state(schedules["operator"]) == before
    assert state(schedules["fenced"])[0] == "active"
    by_row = {m.split(":")[0]: m for m in messages_of(response)}
    assert "refused — DS110" in by_row["tenant-a/paused-1"]
    assert "released" in by_row["tenant-a/fenced-1"]


def test_release__of_an_active_schedule_is_refused_not_suspended(csrf_client, superuser,
                                                                  schedules):
    csrf_client.force_login(superuser)
    response = confirm(csrf_client, "release", schedules["active"])
    [message] = messages_of(response)
    assert "refused — DS116" in message


def test_operation__on_a_revision_changed_since_the_page_is_refused(csrf_client, superuser,
                                                                     schedules):
    pk = schedules["active"]
    csrf_client.force_login(superuser)
    url = operate_url("delete", pk)
    page = csrf_client.get(url)
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page), "ids": str(pk),
                                      "revision-" + str(pk): "7", "confirm": "on"}, follow=True)
    [message] = messages_of(response)
    assert "refused — DS106" in message
    assert state(pk)[0] == "active"


def test_suspend__of_a_suspended_schedule_reports_it_unchanged(csrf_client, superuser,
                                                               schedules):
    csrf_client.force_login(superuser)
    before = state(schedules["operator"])
    response = confirm(csrf_client, "suspend", schedules["operator"], data={"reason": "again"})
    [message] = messages_of(response)
    assert "unchanged" in message
    assert state(schedules["operator"]) == before
    assert history(schedules["operator"]) == []


# ---------------------------------------------------------------- without the permission
@pytest.mark.parametrize("operation", OPERATIONS)
def test_operation__staff_without_the_permission_is_refused(client, viewer, scoped_users,
                                                            schedules, operation):
    scoped_users["viewer"] = ["tenant-a"]
    which, data, _ = OPERATIONS[operation]
    pk = schedules[which]
    before = state(pk)
    client.force_login(viewer)
    assert client.get(operate_url(operation, pk)).status_code == 403
    assert client.post(operate_url(operation, pk), {"ids": str(pk), **data}).status_code == 403
    assert state(pk) == before and history(pk) == []


def test_operation__each_permission_opens_only_its_own_operation(client, django_user_model,
                                                                 scoped_users, schedules):
    from tests.admin.conftest import VIEW_CODENAMES, _user

    scoped_users["suspender"] = ["tenant-a"]
    user = _user(django_user_model, "suspender", codenames=VIEW_CODENAMES + ("suspend_schedule",))
    client.force_login(user)
    assert client.get(operate_url("suspend", schedules["active"])).status_code == 200
    assert client.get(operate_url("release", schedules["fenced"])).status_code == 403
    assert client.get(operate_url("delete", schedules["active"])).status_code == 403


def test_changelist_actions__are_offered_only_with_their_permission(client, viewer, operator,
                                                                    scoped_users, schedules):
    scoped_users.update(viewer=["tenant-a"], operator=["tenant-a"])
    url = reverse(CHANGELIST)
    client.force_login(viewer)
    assert client.get(url).context["action_form"] is None
    client.force_login(operator)
    choices = dict(client.get(url).context["action_form"].fields["action"].choices)
    assert {"suspend_selected", "release_selected", "delete_selected_schedules"} <= set(choices)
    assert "delete_selected" not in choices


def test_changelist_action__posted_without_the_permission_changes_nothing(
        client, viewer, scoped_users, schedules):
    scoped_users["viewer"] = ["tenant-a"]
    pk = schedules["active"]
    client.force_login(viewer)
    response = client.post(reverse(CHANGELIST), {"action": "delete_selected_schedules",
                                                 "_selected_action": [str(pk)], "index": "0"})
    # Django refuses an action the user may not run: no redirect to the operation page.
    assert response.status_code in (200, 302)
    assert "operate" not in response.get("Location", "")
    assert state(pk)[0] == "active"


def test_changelist_action__redirects_to_the_confirmation_page(client, superuser, schedules):
    client.force_login(superuser)
    pks = [schedules["active"], schedules["other"]]
    response = client.post(reverse(CHANGELIST), {
        "action": "suspend_selected", "_selected_action": [str(p) for p in pks], "index": "0"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse(OPERATE, args=["suspend"]))
    assert "ids=" + "%2C".join(str(p) for p in sorted(pks)) in response["Location"]
    assert all(state(p)[0] == "active" for p in pks)


# ---------------------------------------------------------------- anonymous, CSRF, scopes
@pytest.mark.parametrize("operation", OPERATIONS)
def test_operation__anonymous_is_sent_to_the_login_page(client, schedules, operation):
    which, data, _ = OPERATIONS[operation]
    pk = schedules[which]
    before = state(pk)
    for response in (client.get(operate_url(operation, pk)),
                     client.post(operate_url(operation, pk), {"ids": str(pk), **data})):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
    assert state(pk) == before


@pytest.mark.parametrize("operation", OPERATIONS)
def test_operation__post_without_csrf_token_is_forbidden(csrf_client, superuser, schedules,
                                                         operation):
    which, data, _ = OPERATIONS[operation]
    pk = schedules[which]
    before = state(pk)
    csrf_client.force_login(superuser)
    response = csrf_client.post(operate_url(operation, pk), {"ids": str(pk), **data})
    assert response.status_code == 403
    assert b"CSRF" in response.content
    assert state(pk) == before and history(pk) == []


def test_changelist_action__post_without_csrf_token_is_forbidden(csrf_client, superuser,
                                                                 schedules):
    csrf_client.force_login(superuser)
    response = csrf_client.post(reverse(CHANGELIST), {
        "action": "suspend_selected", "_selected_action": [str(schedules["active"])],
        "index": "0"})
    assert response.status_code == 403


def test_operation__rows_outside_the_users_scopes_are_left_alone(csrf_client, operator,
                                                                 scoped_users, schedules):
    scoped_users["operator"] = ["tenant-a"]
    csrf_client.force_login(operator)
    other = schedules["other"]
    before = state(other)
    response = confirm(csrf_client, "suspend", schedules["active"], other,
                       data={"reason": "maintenance"})
    assert state(other) == before
    assert state(schedules["active"])[0] == "suspended"
    assert any("not found in your scopes" in m for m in messages_of(response))
    assert history(schedules["active"]) == [("suspended", "operator")]


def test_operation__naming_a_scope_outside_the_users_scopes_is_forbidden(
        client, operator, scoped_users, schedules):
    scoped_users["operator"] = ["tenant-a"]
    client.force_login(operator)
    response = client.get(operate_url("suspend", schedules["other"], scope="tenant-b"))
    assert response.status_code == 403


def test_detail_page__offers_the_operations_the_user_may_run(client, viewer, operator,
                                                             scoped_users, schedules):
    scoped_users.update(viewer=["tenant-a"], operator=["tenant-a"])
    url = reverse("admin:durable_schedule_scheduledefinition_change",
                  args=[schedules["active"]])
    client.force_login(operator)
    offered = [op["name"] for op in client.get(url).context["operations"]]
    assert offered == ["suspend", "delete"]
    client.force_login(viewer)
    assert client.get(url).context["operations"] == []


def test_operation__returns_to_the_detail_page_but_never_off_site(csrf_client, superuser,
                                                                  schedules):
    pk = schedules["active"]
    detail = reverse("admin:durable_schedule_scheduledefinition_change", args=[pk])
    csrf_client.force_login(superuser)
    for target, expected in ((detail, detail), ("https://evil.example/", reverse(CHANGELIST))):
        url = operate_url("suspend", pk) + f"&next={target}"
        page = csrf_client.get(url)
        response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                          "ids": str(pk), "reason": "x", "next": target,
                                          **revisions_from(page)})
        assert response.status_code == 302
        assert response["Location"] == expected


def test_schedule_made_by_the_api__is_listed_operated_and_audited(csrf_client, superuser, clock):
    """The whole path on a schedule the public API created (not a seeded row)."""
    from datetime import timedelta

    from durable_schedule import schedules, work

    report = work.lookup("admin_tests.report", "v1") or work.define(
        "admin_tests.report", "v1", safety=work.ProviderSafety.IDEMPOTENT)
    info = schedules.create("tenant-api", "api-made", schedules.Every(timedelta(hours=1)),
                            target=report.target(payload={"report": "daily"}), actor="deploy")
    csrf_client.force_login(superuser)
    listed = csrf_client.get(reverse(CHANGELIST) + "?scope=tenant-api")
    [row] = listed.context["cl"].result_list
    assert (row.schedule_id, row.gen_kind, row.state) == ("api-made", "every", "active")
    assert info.next_nominal_utc.strftime("%Y-%m-%d %H:%M:%S") in listed.content.decode()

    confirm(csrf_client, "suspend", row.pk, data={"reason": "vendor outage"})
    assert schedules.get("tenant-api", "api-made").state == "suspended"
    confirm(csrf_client, "delete", row.pk, data={"confirm": "on"})
    assert schedules.get("tenant-api", "api-made").state == "deleted"
    events = list(ScheduleHistory.objects.filter(scope_id="tenant-api")
                  .order_by("recorded_at", "id").values_list("event", "actor"))
    assert events == [("created", "deploy"), ("suspended", "root"), ("deleted", "root")]


def test_operation__needs_the_view_permission_too(client, django_user_model, scoped_users,
                                                  schedules):
    from tests.admin.conftest import _user

    scoped_users["blind"] = ["tenant-a"]
    user = _user(django_user_model, "blind", codenames=("suspend_schedule",))
    client.force_login(user)
    pk = schedules["active"]
    assert client.get(operate_url("suspend", pk)).status_code == 403
    assert client.post(operate_url("suspend", pk), {"ids": str(pk), "reason": "x"}).status_code \
        == 403
    assert state(pk)[0] == "active"
