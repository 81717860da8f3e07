"""A bulk operation over a mixed selection: the confirmation page says, before the POST, which
rows are not in a state the operation is for (they will be refused or left unchanged), and the
result names each row's outcome. Before, the page only said "You are about to suspend 2 rows"
whatever their states."""

from __future__ import annotations

import pytest

from tests.admin.conftest import seed_schedule
from tests.admin.test_actions import confirm, messages_of, operate_url, state

pytestmark = pytest.mark.django_db


def test_bulk_suspend__the_page_names_the_rows_it_is_not_for(client, superuser, clock):
    active = seed_schedule("tenant-a", "active-one")["pk"]
    paused = seed_schedule("tenant-a", "paused-one", state="suspended", reason="operator")["pk"]
    client.force_login(superuser)
    page = client.get(operate_url("suspend", active, paused))
    assert [row.pk for row in page.context["not_offered"]] == [paused]
    html = page.content.decode()
    assert "1 of these rows is not in a state this operation is for" in html
    assert (
        "tenant-a/paused-one: suspended (operator)" in html
        and "tenant-a/active-one: active" not in html
    )
    said = messages_of(confirm(client, "suspend", active, paused, data={"reason": "outage"}))
    assert any(m.startswith("tenant-a/active-one: suspended") for m in said)
    assert "tenant-a/paused-one: unchanged, the schedule is suspended." in said
    assert state(active)[0] == "suspended" and state(paused)[0] == "suspended"


def test_bulk_suspend__an_all_applicable_selection_has_no_such_note(client, superuser, clock):
    one = seed_schedule("tenant-a", "a1")["pk"]
    two = seed_schedule("tenant-a", "a2")["pk"]
    client.force_login(superuser)
    page = client.get(operate_url("suspend", one, two))
    assert page.context["not_offered"] == []
    assert 'id="not-offered"' not in page.content.decode()
