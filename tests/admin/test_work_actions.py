"""Issue 6 item 2 for Work: recording Applied / NotApplied proof on suspended Work goes through
``work.record_proof``, behind ``record_work_proof``, with a confirmation page that names the
permit the proof resolves, the operator as actor and one message per row."""

from __future__ import annotations

import pytest
from django.urls import reverse

from durable_schedule.store.models import Work, WorkHistory, WorkPermit
from tests.admin.conftest import VIEW_CODENAMES, _user, seed_work
from tests.admin.test_actions import messages_of, token_from

pytestmark = pytest.mark.django_db

OPERATE = "admin:durable_schedule_work_operate"
CHANGELIST = "admin:durable_schedule_work_changelist"


def proof_url(*pks, scope=None):
    url = reverse(OPERATE, args=["proof"]) + "?ids=" + ",".join(str(p) for p in pks)
    return url + (f"&scope={scope}" if scope else "")


def permits(work):
    return list(WorkPermit.objects.filter(work_id=work["work_id"]).order_by("permit_no")
                .values_list("permit_no", "outcome", "resolved_by", "resolution_source"))


def snapshot(work):
    row = Work.objects.get(pk=work["pk"])
    return row.state, row.result, permits(work)


def post_proof(client, *works, data, tamper=None):
    url = proof_url(*(w["pk"] for w in works))
    page = client.get(url)
    assert page.status_code == 200
    form = {"csrfmiddlewaretoken": token_from(page), "ids": ",".join(str(w["pk"]) for w in works),
            **data}
    for row, permit in page.context["proof_rows"]:  # as the page posts it
        form[f"permit-{row.pk}"] = "none" if permit is None else str(permit.permit_no)
    form.update(tamper or {})
    return client.post(url, form, follow=True)


@pytest.fixture
def suspended(clock):
    """Suspended Work whose attempt 1 failed and whose attempt 2 is an unresolved permit."""
    return seed_work("tenant-a", state="suspended", permits=("failed", None))


def test_confirmation_page__names_the_permit_the_proof_resolves(client, superuser, suspended):
    client.force_login(superuser)
    response = client.get(proof_url(suspended["pk"]))
    [(row, permit)] = response.context["proof_rows"]
    assert permit.permit_no == 2 and permit.attempt == 2
    assert "permit #2 — attempt 2" in response.content.decode()


def test_applied__succeeds_the_work_with_the_result_and_records_the_operator(
        csrf_client, superuser, suspended):
    csrf_client.force_login(superuser)
    response = post_proof(csrf_client, suspended,
                          data={"outcome": "applied", "result": '{"sent": true}'})
    state, result, found = snapshot(suspended)
    assert state == "succeeded" and result == {"sent": True}
    assert found[1] == (2, "applied", "root", "operator")
    assert found[0][1] == "failed", "an earlier resolved permit is untouched"
    events = WorkHistory.objects.filter(work_id=suspended["work_id"]).values_list("event",
                                                                                  "actor")
    assert ("proof_applied", "root") in set(events)
    [message] = messages_of(response)
    assert "applied recorded for permit #2" in message and "succeeded" in message


def test_not_applied__resolves_only_the_newest_permit_while_another_is_uncertain(
        csrf_client, superuser, clock):
    work = seed_work("tenant-a", state="suspended", permits=(None, None))
    csrf_client.force_login(superuser)
    response = post_proof(csrf_client, work, data={"outcome": "not_applied"})
    state, _, found = snapshot(work)
    assert state == "suspended"
    assert [(p[0], p[1]) for p in found] == [(1, None), (2, "not_applied")]
    [message] = messages_of(response)
    assert "1 unresolved permit(s) remain" in message


def test_not_applied__with_a_result_is_refused_by_the_form(csrf_client, superuser, suspended):
    csrf_client.force_login(superuser)
    before = snapshot(suspended)
    url = proof_url(suspended["pk"])
    page = csrf_client.get(url)
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                      "ids": str(suspended["pk"]), "outcome": "not_applied",
                                      "result": '{"x": 1}'})
    assert "A NotApplied proof carries no result" in response.content.decode()
    assert snapshot(suspended) == before


def test_proof__on_work_that_is_not_suspended_is_refused_with_its_code(csrf_client, superuser,
                                                                       suspended, clock):
    running = seed_work("tenant-a", state="pending", permits=(None,))
    csrf_client.force_login(superuser)
    before = snapshot(running)
    response = post_proof(csrf_client, running, suspended, data={"outcome": "applied"})
    assert snapshot(running) == before
    assert snapshot(suspended)[0] == "succeeded"
    by_row = {m.split(":")[0]: m for m in messages_of(response)}
    assert "refused — DS213" in by_row[f"tenant-a/{running['work_id']}"]
    assert "refused" not in by_row[f"tenant-a/{suspended['work_id']}"]


def test_proof__for_a_permit_other_than_the_one_shown_is_refused(csrf_client, superuser,
                                                                 suspended):
    csrf_client.force_login(superuser)
    before = snapshot(suspended)
    response = post_proof(csrf_client, suspended, data={"outcome": "applied"},
                          tamper={f"permit-{suspended['pk']}": "1"})
    [message] = messages_of(response)
    assert "refused — DS213" in message
    assert snapshot(suspended) == before


def test_proof__staff_without_the_permission_is_refused(client, viewer, scoped_users,
                                                        suspended):
    scoped_users["viewer"] = ["tenant-a"]
    before = snapshot(suspended)
    client.force_login(viewer)
    assert client.get(proof_url(suspended["pk"])).status_code == 403
    response = client.post(proof_url(suspended["pk"]),
                           {"ids": str(suspended["pk"]), "outcome": "applied"})
    assert response.status_code == 403
    assert client.get(reverse(CHANGELIST)).context["action_form"] is None
    detail = client.get(reverse("admin:durable_schedule_work_change", args=[suspended["pk"]]))
    assert detail.context["operations"] == []
    assert snapshot(suspended) == before


def test_proof__a_schedule_permission_does_not_open_it(client, django_user_model, scoped_users,
                                                       suspended):
    scoped_users["scheduler"] = ["tenant-a"]
    user = _user(django_user_model, "scheduler", codenames=VIEW_CODENAMES + (
        "suspend_schedule", "release_schedule", "delete_schedule"))
    client.force_login(user)
    assert client.get(proof_url(suspended["pk"])).status_code == 403


def test_proof__anonymous_is_sent_to_the_login_page(client, suspended):
    before = snapshot(suspended)
    for response in (client.get(proof_url(suspended["pk"])),
                     client.post(proof_url(suspended["pk"]),
                                 {"ids": str(suspended["pk"]), "outcome": "applied"})):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
    assert snapshot(suspended) == before


def test_proof__post_without_csrf_token_is_forbidden(csrf_client, superuser, suspended):
    before = snapshot(suspended)
    csrf_client.force_login(superuser)
    response = csrf_client.post(proof_url(suspended["pk"]),
                                {"ids": str(suspended["pk"]), "outcome": "applied"})
    assert response.status_code == 403
    assert snapshot(suspended) == before


def test_proof__operator_with_the_permission_is_offered_it_and_recorded(
        csrf_client, operator, scoped_users, suspended, clock):
    other = seed_work("tenant-b", state="suspended", permits=(None,))
    scoped_users["operator"] = ["tenant-a"]
    csrf_client.force_login(operator)
    detail = csrf_client.get(reverse("admin:durable_schedule_work_change",
                                     args=[suspended["pk"]]))
    assert [op["name"] for op in detail.context["operations"]] == ["proof"]
    before_other = snapshot(other)
    response = post_proof(csrf_client, suspended, other, data={"outcome": "applied"})
    assert snapshot(suspended)[2][1][2] == "operator"
    assert snapshot(other) == before_other
    assert any("not found in your scopes" in m for m in messages_of(response))


def test_changelist_action__redirects_to_the_proof_page(client, superuser, suspended):
    client.force_login(superuser)
    response = client.post(reverse(CHANGELIST), {
        "action": "record_proof_selected", "_selected_action": [str(suspended["pk"])],
        "index": "0"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse(OPERATE, args=["proof"]))
    assert snapshot(suspended)[0] == "suspended"


def test_applied__with_a_result_that_is_not_json_is_refused_by_the_form(csrf_client, superuser,
                                                                       suspended):
    csrf_client.force_login(superuser)
    before = snapshot(suspended)
    url = proof_url(suspended["pk"])
    page = csrf_client.get(url)
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                      "ids": str(suspended["pk"]), "outcome": "applied",
                                      "result": "{sent: yes"})
    assert "Enter valid JSON" in response.content.decode()
    assert snapshot(suspended) == before
