"""Crafted change list URLs: a query parameter that is no filter of the page, or a filter value
the store cannot hold, is a 400 (DS406) that changes nothing and reveals nothing -- never a
server error, never a lookup on a column the page does not filter. Also: every generation kind
is a filter choice, the dashboard's wording does not depend on other scopes, and an operation
naming malformed or too many row ids is refused whole."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.core.exceptions import BadRequest
from django.test import RequestFactory
from django.urls import reverse
from django.utils.http import urlencode

from durable_schedule.admin.actions import MAX_ROWS
from durable_schedule.admin.base import ReadOnlyScopedAdmin
from durable_schedule.store.models import ScheduleDefinition, Work
from tests.admin.conftest import _user, seed_schedule
from tests.admin.test_actions import token_from
from tests.admin.test_pages import MODELS, changelist

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("query", ["?scope_id__regex=(", "?scope_id=%00",
                                   "?id__gt=0", "?scope=tenant-a&scope_routing_id__lt=0"])
def test_changelist__a_parameter_that_is_no_filter_is_a_bad_request(client, superuser,
                                                                     two_scopes, model, query):
    client.force_login(superuser)
    assert client.get(changelist(model) + query).status_code == 400


@pytest.mark.parametrize(("model", "param"), [
    ("scheduledefinition", "state"), ("scheduledefinition", "suspension_reason"),
    ("occurrence", "kind"), ("schedulegeneration", "kind"), ("schedulehistory", "event"),
    ("work", "state"), ("work", "work_name"), ("work", "execution_admission_closed_reason"),
    ("workpermit", "outcome"), ("workquarantine", "reason"), ("workhistory", "event"),
])
def test_changelist__a_filter_value_with_nul_is_a_bad_request(client, superuser, two_scopes,
                                                              model, param):
    client.force_login(superuser)
    assert client.get(changelist(model) + f"?{param}=a%00b").status_code == 400
    assert client.get(changelist(model) + f"?{param}=" + "x" * 1001).status_code == 400


def test_changelist__a_value_outside_a_fixed_list_is_a_bad_request(client, superuser,
                                                                   two_scopes):
    client.force_login(superuser)
    assert client.get(changelist("work") + "?state=runing").status_code == 400
    assert client.get(changelist("work") + "?state=running").status_code == 200


def test_changelist__a_scoped_user_cannot_probe_columns_the_page_does_not_filter(
        client, viewer, scoped_users, two_scopes):
    scoped_users["viewer"] = ["tenant-a"]
    client.force_login(viewer)
    for query in ("?payload__contains=%7B%7D", "?fingerprint_digest__startswith=x",
                  "?scope_id__in=tenant-a,tenant-b"):
        assert client.get(changelist("work") + query).status_code == 400, query
    assert client.get(changelist("work") + "?state=suspended&o=2&q=demo&p=1").status_code == 200


def test_refusal__names_the_parameter_the_code_and_the_page_filters(superuser):
    request = RequestFactory().get(changelist("work"), {"payload__contains": "x"})
    request.user = superuser
    with pytest.raises(BadRequest) as caught:
        admin.site._registry[Work].check_changelist_params(request)
    text = str(caught.value)
    assert text.startswith("DS406: query parameter 'payload__contains' is not a filter")
    assert "(filters: execution_admission_closed_reason, provider_safety, scope, state, " \
           "work_name)" in text


def test_generation_filter__offers_every_spec_kind_cron_included(client, superuser, clock):
    seed_schedule("tenant-a", "nightly")
    client.force_login(superuser)
    response = client.get(changelist("schedulegeneration") + "?kind=cron")
    assert response.status_code == 200
    [kind] = [f for f in response.context["cl"].filter_specs if f.parameter_name == "kind"]
    assert [value for value, _ in kind.lookup_choices] == ["at", "after", "every", "cron"]
    assert list(response.context["cl"].result_list) == []  # the seeded generation is 'every'


def test_dashboard__an_empty_suspension_table_reads_the_same_whatever_other_scopes_hold(
        client, scoped_users, django_user_model, clock):
    user = _user(django_user_model, "alice", codenames=("view_runnerheartbeat",))
    scoped_users["alice"] = ["tenant-a"]
    client.force_login(user)
    seed_schedule("tenant-a", "mine")

    def suspended_table():
        body = client.get("/admin/durable_schedule/runnerheartbeat/").content.decode()
        return re.search(r'<table id="suspended">.*?</table>', body, re.S).group(0)

    before = suspended_table()
    seed_schedule("tenant-b", "theirs", state="suspended", reason="clock_jump")
    assert suspended_table() == before
    assert "No suspended schedule in your scopes." in before


def test_every_page__declares_only_list_filters_with_a_parameter():
    # check_changelist_params knows a filter by its parameter: a plain field name in
    # list_filter would be refused as an unknown parameter.
    pages = [a for a in admin.site._registry.values() if isinstance(a, ReadOnlyScopedAdmin)]
    assert len(pages) == len(MODELS)
    for model_admin in pages:
        for spec in model_admin.list_filter:
            assert getattr(spec, "parameter_name", None), (model_admin, spec)


# ---------------------------------------------------------------- operation row ids
def _operate(operation="suspend"):
    return reverse("admin:durable_schedule_scheduledefinition_operate", args=[operation])


@pytest.mark.parametrize("ids", ["", "1,x", "+1", "1_0", "١", "99999999999999999999", "-1"])
def test_operation__malformed_row_ids_are_a_bad_request(client, superuser, two_scopes, ids):
    client.force_login(superuser)
    assert client.get(_operate() + "?" + urlencode({"ids": ids})).status_code == 400


def test_operation__more_rows_than_it_handles_are_refused_not_cut_unseen(csrf_client, superuser,
                                                                       clock):
    pks = [seed_schedule("tenant-a", f"s-{n:03}")["pk"] for n in range(MAX_ROWS + 1)]
    csrf_client.force_login(superuser)
    ids = ",".join(str(pk) for pk in pks)
    assert csrf_client.get(_operate() + "?" + urlencode({"ids": ids})).status_code == 400
    page = csrf_client.get(_operate() + "?" + urlencode({"ids": ids.split(",", 1)[1]}))
    assert page.status_code == 200 and len(page.context["rows"]) == MAX_ROWS
    response = csrf_client.post(_operate() + "?" + urlencode({"ids": ids}), {
        "csrfmiddlewaretoken": token_from(page), "ids": ids, "reason": "outage"})
    assert response.status_code == 400
    assert set(ScheduleDefinition.objects.filter(pk__in=pks)
               .values_list("state", flat=True)) == {"active"}
