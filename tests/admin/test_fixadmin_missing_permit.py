"""The proof page's twin of the missing revision: a crafted POST that omits ``permit-<pk>`` was
taken as "whatever permit is the most recent unresolved one at POST time", so it skipped the
check that the proof resolves the permit the operator looked at (DS213). The proof page now
always posts the field (``none`` when it showed no permit): a POST without it is refused whole
(400, DS406) and changes nothing, and ``none`` refuses the row (DS213) even if a permit exists
by now, since nobody looked at it."""

from __future__ import annotations

import pytest

from tests.admin.conftest import seed_work
from tests.admin.test_actions import messages_of, token_from
from tests.admin.test_work_actions import post_proof, proof_url, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def suspended(clock):
    return seed_work("tenant-a", state="suspended", permits=("failed", None))


def test_a_proof_post_without_the_permit_is_refused_whole(csrf_client, superuser, suspended):
    before = snapshot(suspended)
    csrf_client.force_login(superuser)
    url = proof_url(suspended["pk"])
    page = csrf_client.get(url)
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                      "ids": str(suspended["pk"]), "outcome": "not_applied"})
    assert response.status_code == 400
    assert snapshot(suspended) == before


def test_a_page_that_showed_no_permit_resolves_none(csrf_client, superuser, suspended):
    before = snapshot(suspended)
    csrf_client.force_login(superuser)
    response = post_proof(csrf_client, suspended, data={"outcome": "not_applied"},
                          tamper={f"permit-{suspended['pk']}": "none"})
    [message] = messages_of(response)
    assert "refused — DS213" in message
    assert snapshot(suspended) == before


def test_the_page_posts_none_when_it_shows_no_permit(client, superuser, clock):
    resolved = seed_work("tenant-a", state="suspended", permits=("failed",))
    client.force_login(superuser)
    page = client.get(proof_url(resolved["pk"]))
    assert f'name="permit-{resolved["pk"]}" value="none"' in page.content.decode()
