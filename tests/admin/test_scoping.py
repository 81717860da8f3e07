"""Issue 6 item 3: no admin page shows another scope's data in a scoped deployment.

Layer 1 (every deployment): DURABLE_SCHEDULE['ADMIN_SCOPES'] decides the scopes a user sees and
every queryset is filtered by them. Layer 2 (a production owner that RLS binds): the page's
reads run with the transaction-local scope set, so the policy admits exactly that scope. Layer 2
is tested as a non-superuser, non-BYPASSRLS member of the owner role, which is what such an
owner is to row-level security.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test import override_settings
from django.urls import reverse

from durable_schedule import conf
from durable_schedule.admin import scoping
from tests.admin.test_actions import revisions_from
from tests.admin.test_pages import MODELS, change, changelist, row_scope

pytestmark = pytest.mark.django_db


def scopes_seen(client, model, query=""):
    response = client.get(changelist(model) + query)
    assert response.status_code == 200, (model, response.status_code)
    return {row_scope(r) for r in response.context["cl"].result_list}


# ---------------------------------------------------------------- layer 1: ADMIN_SCOPES
@pytest.mark.parametrize("model", MODELS)
def test_scoped_user__sees_only_their_scope_on_every_page(client, viewer, scoped_users,
                                                          two_scopes, model):
    scoped_users["viewer"] = ["tenant-a"]
    client.force_login(viewer)
    assert scopes_seen(client, model) == {"tenant-a"}
    assert "tenant-b" not in client.get(changelist(model)).content.decode()


@pytest.mark.parametrize("model", ["scheduledefinition", "work", "occurrence", "workpermit"])
def test_scoped_user__cannot_open_another_scopes_row(client, viewer, scoped_users, two_scopes,
                                                     model):
    scoped_users["viewer"] = ["tenant-a"]
    client.force_login(viewer)
    from django.apps import apps

    other = apps.get_model("durable_schedule", model).objects.filter(scope_id="tenant-b").first()
    response = client.get(change(model, other.pk))
    # Django answers a row outside the queryset like a missing one: back to the index.
    assert response.status_code == 302
    assert "tenant-b" not in client.get(response["Location"]).content.decode()


def test_scoped_user__naming_another_scope_is_forbidden(client, viewer, scoped_users,
                                                        two_scopes):
    scoped_users["viewer"] = ["tenant-a"]
    client.force_login(viewer)
    assert client.get(changelist("scheduledefinition") + "?scope=tenant-b").status_code == 403
    pk = two_scopes["tenant-a"]["schedule"]["pk"]
    assert client.get(change("scheduledefinition", pk) + "?scope=tenant-b").status_code == 403


def test_scope_parameter__malformed_is_a_bad_request(client, superuser, two_scopes):
    client.force_login(superuser)
    assert client.get(changelist("work") + "?scope=%20padded%20").status_code == 400


def test_scope_filter__narrows_a_user_who_sees_several(client, viewer, scoped_users,
                                                       two_scopes):
    scoped_users["viewer"] = ["tenant-a", "tenant-b"]
    client.force_login(viewer)
    assert scopes_seen(client, "work") == {"tenant-a", "tenant-b"}
    assert scopes_seen(client, "work", "?scope=tenant-b") == {"tenant-b"}
    assert scopes_seen(client, "workdispatch", "?scope=tenant-b") == {"tenant-b"}


def test_default_setting__staff_see_no_scope_until_granted(client, viewer, two_scopes):
    client.force_login(viewer)
    for model in MODELS:
        assert scopes_seen(client, model) == set()
    body = client.get(changelist("work")).content.decode()
    assert "ADMIN_SCOPES" in body


def test_all_scopes_for_staff__shows_every_scope(client, viewer, settings, two_scopes):
    settings.DURABLE_SCHEDULE = {
        "ADMIN_SCOPES": "durable_schedule.admin.scoping.all_scopes_for_staff"}
    client.force_login(viewer)
    assert scopes_seen(client, "scheduledefinition") == {"tenant-a", "tenant-b"}


def test_visibility__an_answer_that_is_not_a_list_or_all_is_an_error(django_user_model, db):
    user = django_user_model(username="u", is_staff=True, is_active=True)
    with override_settings(DURABLE_SCHEDULE={"ADMIN_SCOPES": lambda u: "tenant-a"}):
        with pytest.raises(TypeError):
            scoping.visibility_for(user)
    with override_settings(DURABLE_SCHEDULE={"ADMIN_SCOPES": lambda u: ["bad\x01"]}):
        with pytest.raises(Exception) as info:
            scoping.visibility_for(user)
        assert getattr(info.value, "code", "") == "DS301"
    inactive = django_user_model(username="i", is_superuser=True, is_active=False)
    assert scoping.visibility_for(inactive).scopes == frozenset()


@pytest.mark.parametrize("value, message", [
    ("durable_schedule.admin.scoping.no_such_function", "cannot be imported"),
    (42, "must be a callable"),
])
def test_setting__is_validated_at_startup(settings, value, message):
    settings.DURABLE_SCHEDULE = {"ADMIN_SCOPES": value}
    with pytest.raises(ValueError, match=message):
        conf.validate()


def test_setting__default_and_callable_values_validate(settings):
    conf.validate()
    settings.DURABLE_SCHEDULE = {"ADMIN_SCOPES": scoping.all_scopes_for_staff}
    conf.validate()


# ---------------------------------------------------------------- layer 2: binding RLS
@pytest.fixture
def rls_bound_owner(two_scopes):
    """Run the rest of the test as an owner that row-level security binds.

    A NOLOGIN role that is a member of the migration owner (so it has the owner's privileges
    and the owner's dispatch policies) and of durable_runtime (so the API's scoped() may enter
    it), but is neither superuser nor BYPASSRLS. Created and entered inside the test's
    transaction, so everything is rolled back.
    """
    role = f"durable_admin_probe_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cur:
        cur.execute("select current_user")
        owner = cur.fetchone()[0]
        cur.execute(f'create role "{role}" nologin nosuperuser nobypassrls inherit')
        cur.execute(f'grant "{owner}" to "{role}"')
        cur.execute(f'grant durable_runtime to "{role}"')
        cur.execute(f'set local role "{role}"')
    assert not scoping.owner_bypasses_rls()
    return two_scopes


def test_binding_rls__an_unscoped_page_reads_nothing_and_says_why(client, superuser,
                                                                  rls_bound_owner):
    client.force_login(superuser)
    response = client.get(changelist("scheduledefinition"))
    assert list(response.context["cl"].result_list) == []
    assert response.context["durable_needs_scope"] is True
    assert "Row-level security binds" in response.content.decode()


@pytest.mark.parametrize("model", MODELS)
def test_binding_rls__a_scoped_page_reads_in_that_scope(client, superuser, rls_bound_owner,
                                                        model):
    client.force_login(superuser)
    assert scopes_seen(client, model, "?scope=tenant-a") == {"tenant-a"}
    assert scopes_seen(client, model, "?scope=tenant-b") == {"tenant-b"}


def test_binding_rls__detail_page_reads_its_timeline_in_scope(client, superuser,
                                                              rls_bound_owner):
    client.force_login(superuser)
    pk = rls_bound_owner["tenant-a"]["schedule"]["pk"]
    assert client.get(change("scheduledefinition", pk)).status_code == 302  # invisible
    response = client.get(change("scheduledefinition", pk) + "?scope=tenant-a")
    assert response.status_code == 200
    timeline = response.context["timeline"]
    assert [g.generation for g in timeline["generations"]] == [1]
    assert [row.work.pk for row in timeline["occurrences"]] == [
        rls_bound_owner["tenant-a"]["work"]["pk"]]
    assert timeline["dispatch"] is not None


def test_binding_rls__a_user_with_one_scope_reads_in_it_without_asking(
        client, viewer, scoped_users, rls_bound_owner):
    scoped_users["viewer"] = ["tenant-b"]
    client.force_login(viewer)
    assert scopes_seen(client, "work") == {"tenant-b"}


def test_read_scope__leaves_no_scope_setting_behind(client, superuser, rls_bound_owner):
    client.force_login(superuser)
    client.get(changelist("work") + "?scope=tenant-a")
    with connection.cursor() as cur:
        cur.execute("select coalesce(current_setting('durable_schedule.scope_id', true), '')")
        assert cur.fetchone()[0] == ""


def test_binding_rls__an_operation_reads_and_acts_in_the_named_scope(client, superuser,
                                                                     rls_bound_owner):
    from durable_schedule.store.models import ScheduleDefinition

    pk = rls_bound_owner["tenant-a"]["schedule"]["pk"]
    client.force_login(superuser)
    url = reverse("admin:durable_schedule_scheduledefinition_operate", args=["suspend"])
    url += f"?ids={pk}&scope=tenant-a"
    page = client.get(url)
    assert [r.pk for r in page.context["rows"]] == [pk]
    client.post(url, {"ids": str(pk), "reason": "rls", **revisions_from(page)})
    with connection.cursor() as cur:
        cur.execute("select set_config('durable_schedule.scope_id', 'tenant-a', true)")
        assert ScheduleDefinition.objects.get(pk=pk).state == "suspended"
        cur.execute("select set_config('durable_schedule.scope_id', '', true)")


def test_binding_rls__links_from_a_scoped_list_open_in_that_scope(client, superuser,
                                                                  rls_bound_owner):
    import re

    client.force_login(superuser)
    listing = client.get(changelist("work") + "?scope=tenant-b").content.decode()
    links = re.findall(r'href="(/admin/durable_schedule/work/\d+/change/\?[^"]+)"', listing)
    assert links, "the list links its rows"
    response = client.get(links[0].replace("&amp;", "&"))
    assert response.status_code == 200
    assert response.context["original"].scope_id == "tenant-b"



#: A valid scope id with the characters a query string gives a meaning to (``&`` starts another
#: parameter, ``+`` is a space, ``#`` ends the query, ``%`` starts an escape).
QUERY_SYNTAX_SCOPE = "r&d+ops #1 100%"


@pytest.fixture
def query_syntax_work(two_scopes):
    """A Work (with an occurrence, a permit, history and a dispatch row) in QUERY_SYNTAX_SCOPE,
    seeded as the owner before ``rls_bound_owner`` binds the rest of the test."""
    from tests.admin.conftest import T0, seed_occurrence, seed_work

    occurrence = seed_occurrence(QUERY_SYNTAX_SCOPE, "nightly", T0)
    return seed_work(QUERY_SYNTAX_SCOPE, occurrence=occurrence, permits=(None,))


@pytest.fixture
def bound_with_query_syntax_work(query_syntax_work, rls_bound_owner):
    return query_syntax_work


@pytest.mark.parametrize("model", ["occurrence", "workhistory", "workpermit", "workdispatch"])
def test_binding_rls__row_links_carry_a_scope_id_with_query_syntax_intact(
        client, superuser, bound_with_query_syntax_work, model):
    # The links to a row's Work carried ?scope=<id> unencoded: a scope id with "&", "+", "#"
    # or "%" opened the Work page in another scope ("r"), where the row does not exist.
    import html
    import re
    from urllib.parse import urlencode

    client.force_login(superuser)
    listing = client.get(changelist(model) + "?" + urlencode({"scope": QUERY_SYNTAX_SCOPE}))
    assert listing.status_code == 200
    links = re.findall(r'href="(/admin/durable_schedule/work/\d+/change/\?[^"]+)"',
                       listing.content.decode())
    assert links, "the list links its rows' Work"
    response = client.get(html.unescape(links[0]))
    assert response.status_code == 200, response
    assert response.context["original"].pk == bound_with_query_syntax_work["pk"]
    assert response.context["durable_scope"] == QUERY_SYNTAX_SCOPE
