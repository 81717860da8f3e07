"""Issue 11 item 9: reads never write. Reading an unknown scope returns what an empty scope
returns and leaves no scope row behind (which the admin's scope filter would then list); the
first committed write creates a scope, a failed one does not."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from demo import schedule_targets
from django.db import connection
from django.test import RequestFactory

from durable_schedule import schedules, work
from durable_schedule.admin import scoping
from durable_schedule.errors import ScheduleNotFound, WorkNotFound

pytestmark = pytest.mark.django_db
TYPO = "typo-scope"
HOUR = timedelta(hours=1)


def _scopes() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("select scope_id from durable_schedule_scope order by scope_id")
        return [r[0] for r in cur.fetchall()]


def test_reads_of_an_unknown_scope__are_empty_and_create_no_scope(clock):
    before = _scopes()
    assert schedules.list(TYPO) == []
    assert schedules.list(TYPO, states=["active"], after="a", limit=5) == []
    with pytest.raises(ScheduleNotFound):
        schedules.get(TYPO, "nightly")
    assert work.list(TYPO) == []
    assert work.list(TYPO, state="pending", page_size=3) == []
    with pytest.raises(WorkNotFound):
        work.get(TYPO, uuid.uuid4())
    assert _scopes() == before


def test_admin_scope_filter__does_not_offer_a_scope_that_was_only_read(clock, admin_user):
    schedules.list(TYPO)
    work.list(TYPO)
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    assert TYPO not in scoping.scope_choices(request)


def test_admin_pages__reading_an_unknown_scope_creates_none(clock, admin_client):
    for model in ("scheduledefinition", "work"):
        url = f"/admin/durable_schedule/{model}/?scope={TYPO}"
        assert admin_client.get(url).status_code == 200
    assert TYPO not in _scopes()


def test_writes__the_first_committed_write_creates_the_scope_a_failed_one_does_not(clock):
    target = schedule_targets.report.target(payload={"report": "nightly"})
    with pytest.raises(ScheduleNotFound):
        schedules.update(TYPO, "missing", expected_revision=1, spec=schedules.Every(HOUR))
    with pytest.raises(ScheduleNotFound):
        schedules.delete(TYPO, "missing")
    assert TYPO not in _scopes()
    schedules.create(TYPO, "nightly", schedules.Every(HOUR), target)
    assert TYPO in _scopes()
    assert [s.schedule_id for s in schedules.list(TYPO)] == ["nightly"]


def test_provision_scope__is_the_explicit_operator_call_and_is_idempotent(clock):
    from durable_schedule.operations.provisioning import provision_scope

    first = provision_scope("tenant-new")
    again = provision_scope("tenant-new")
    assert first == again and first.generation == 1
    assert "tenant-new" in _scopes()


def test_tasks_result_read__of_an_unknown_scope_creates_none(clock):
    from durable_schedule.tasks import results

    assert results.read(TYPO, uuid.uuid4()) is None
    assert TYPO not in _scopes()
