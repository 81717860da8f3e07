"""Review rvops: crafted change list actions, the admin's permission and scope boundaries, and
what the operator pages show. Each test states the documented contract (docs/admin.md)."""

from __future__ import annotations

import pytest

from durable_schedule.store.models import ScheduleDefinition, Work
from tests.admin.test_pages import changelist

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("model", "action"), [("scheduledefinition", "suspend_selected"),
                                               ("work", "cancel_selected_work")])
@pytest.mark.parametrize("selected", [["abc"], ["1", "x1"], ["-1"], ["9" * 30], ["1.0"]])
def test_action__a_selected_row_id_that_is_not_one_is_a_bad_request(client, superuser,
                                                                    two_scopes, model, action,
                                                                    selected):
    """docs/admin.md "How every operation runs": row ids that are not positive numbers are
    refused whole with a 400 (DS406) -- also when they come from the change list's checkboxes
    (Django passed them to ``pk__in`` as posted: a ValueError, a server error)."""
    client.force_login(superuser)
    before = (list(ScheduleDefinition.objects.values_list("revision", flat=True)),
              list(Work.objects.values_list("state", flat=True)))
    response = client.post(changelist(model), {"action": action, "index": 0,
                                               "_selected_action": selected})
    assert response.status_code == 400
    assert (list(ScheduleDefinition.objects.values_list("revision", flat=True)),
            list(Work.objects.values_list("state", flat=True))) == before
