"""A tampered confirmation page: the revision (or permit) it posts is not a positive ASCII
number. ``"²".isdigit()`` is True but ``int("²")`` raises, so the operation answered with a
server error; now the row is refused with DS406 and left alone."""

from __future__ import annotations

import pytest

from tests.admin.test_actions import (  # noqa: F401 (schedules: the fixture)
    messages_of,
    operate_url,
    schedules,
    state,
    token_from,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("posted", ["²", "-1", "0", "1" * 30, "+3", "٣"])
def test_a_malformed_posted_revision_is_refused_and_changes_nothing(csrf_client, superuser,
                                                                   schedules, posted):  # noqa: F811
    pk = schedules["active"]
    before = state(pk)
    csrf_client.force_login(superuser)
    url = operate_url("suspend", pk)
    page = csrf_client.get(url)
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page), "ids": str(pk),
                                      f"revision-{pk}": posted, "reason": "outage"},
                                follow=True)
    assert response.status_code == 200
    [message] = messages_of(response)
    assert "refused — DS406" in message and f"revision-{pk}" in message
    assert state(pk) == before
