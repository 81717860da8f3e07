"""A crafted POST that omits ``revision-<pk>`` for a selected schedule. The confirmation page
the admin renders always carries each row's revision, so such a POST is not one of ours: it was
taken as "the revision read at POST time" and so skipped the stale-row check (DS106). Now the
whole request is a 400 (DS406) before any row is handled, and nothing changes."""

from __future__ import annotations

import pytest
from django.core.exceptions import BadRequest
from django.test import RequestFactory

from durable_schedule.store.models import ScheduleHistory, Work
from tests.admin.test_actions import (  # noqa: F401 (schedules: the fixture)
    confirm,
    history,
    messages_of,
    operate_url,
    schedules,
    state,
    token_from,
)

pytestmark = pytest.mark.django_db

OPERATIONS = {
    "suspend": ("active", {"reason": "outage"}),
    "pause": ("active", {"note": "maintenance"}),
    "release": ("fenced", {}),
    "reissue": ("operator", {}),
    "delete": ("active", {"confirm": "on"}),
}


def _post_without_revisions(client, operation, pks, data, keep=()):
    """The confirmation page's POST with the revisions of every row not in ``keep`` left out."""
    url = operate_url(operation, *pks)
    page = client.get(url)
    assert page.status_code == 200
    form = {"csrfmiddlewaretoken": token_from(page), "ids": ",".join(map(str, pks)), **data}
    form.update({f"revision-{pk}": str(state(pk)[1]) for pk in keep})
    return client.post(url, form)


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_post_without_the_revision_is_refused_whole_and_changes_nothing(
        csrf_client, superuser, schedules, operation):  # noqa: F811
    key, data = OPERATIONS[operation]
    pk = schedules[key]
    before, events = state(pk), history(pk)
    csrf_client.force_login(superuser)
    response = _post_without_revisions(csrf_client, operation, [pk], data)
    assert response.status_code == 400
    assert state(pk) == before and history(pk) == events


def test_one_row_without_its_revision_refuses_the_whole_selection(csrf_client, superuser,
                                                                  schedules):  # noqa: F811
    first, second = schedules["active"], schedules["operator"]
    befores = [state(first), state(second)]
    csrf_client.force_login(superuser)
    response = _post_without_revisions(csrf_client, "delete", [first, second],
                                       {"confirm": "on"}, keep=[first])
    assert response.status_code == 400
    assert [state(first), state(second)] == befores


def test_run_now_without_the_revision_runs_nothing(csrf_client, superuser,
                                                   schedules):  # noqa: F811
    pk = schedules["active"]
    works = Work.objects.count()
    csrf_client.force_login(superuser)
    url = operate_url("trigger", pk)
    page = csrf_client.get(url)
    request_id = page.context["form"].initial["request_id"]
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page), "ids": str(pk),
                                      "request_id": request_id})
    assert response.status_code == 400
    assert Work.objects.count() == works


def test_the_refusal_names_the_field_and_the_code(superuser, schedules):  # noqa: F811
    from django.contrib import admin

    from durable_schedule.store.models import ScheduleDefinition

    pk = schedules["active"]
    request = RequestFactory().post(operate_url("suspend", pk),
                                    {"ids": str(pk), "reason": "outage"})
    request.user = superuser
    model_admin = admin.site._registry[ScheduleDefinition]
    with pytest.raises(BadRequest) as caught:
        model_admin.check_posted_fields(request, [ScheduleDefinition.objects.get(pk=pk)])
    assert str(caught.value).startswith(f"DS406: revision-{pk} is missing")


def test_the_page_the_admin_renders_still_works(csrf_client, superuser,
                                                schedules):  # noqa: F811
    pk = schedules["active"]
    csrf_client.force_login(superuser)
    response = confirm(csrf_client, "suspend", pk, data={"reason": "outage"})
    [message] = messages_of(response)
    assert "suspended (revision" in message
    assert ScheduleHistory.objects.filter(event="suspended").exists()


def test_suspend_of_a_paused_row_is_reported_refused_with_ds175(csrf_client, superuser,
                                                                schedules):  # noqa: F811
    from durable_schedule import schedules as api

    pk = schedules["active"]
    api.pause("tenant-a", "active-1", "maintenance", actor="alice")
    before, events = state(pk), history(pk)
    csrf_client.force_login(superuser)
    response = confirm(csrf_client, "suspend", pk, data={"reason": "outage"})
    [message] = messages_of(response)
    assert "refused — DS175" in message
    assert state(pk) == before and history(pk) == events
