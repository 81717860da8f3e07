"""A Django user named like the sync actor cannot make a hand-made schedule look managed by
sync_schedules (and so prunable): the admin's writes under that name are refused with DS156
and change nothing."""

from __future__ import annotations

import pytest

from durable_schedule import schedules
from durable_schedule.schedules import declared
from durable_schedule.store.models import ScheduleDefinition
from tests.admin.conftest import _user
from tests.admin.test_actions import confirm, messages_of, state
from tests.admin.test_lifecycle_actions import make, suspend_for
from tests.lifecycle.test_declared import decl
from tests.schedules.conftest import SCOPE

pytestmark = pytest.mark.django_db


def test_admin__a_user_named_sync_schedules_cannot_write_a_schedule(csrf_client,
                                                                     django_user_model, clock):
    pk = make("hand-made")
    suspend_for(pk, "clock_jump")
    before = ScheduleDefinition.objects.get(pk=pk)
    csrf_client.force_login(_user(django_user_model, declared.SYNC_ACTOR, superuser=True))
    [message] = messages_of(confirm(csrf_client, "reissue", pk))
    assert "DS156" in message
    [message] = messages_of(confirm(csrf_client, "delete", pk, data={"confirm": "on"}))
    assert "DS156" in message
    after = ScheduleDefinition.objects.get(pk=pk)
    assert (after.state, after.revision, after.active_generation) == (
        "suspended", before.revision, before.active_generation)
    assert state(pk)[0] == "suspended"
    info = schedules.get(SCOPE, "hand-made")
    assert info.created_by != declared.SYNC_ACTOR
    # Still not sync's: a prune that declares something else does not touch it.
    assert declared.sync(declared=[decl("other", scope=SCOPE)], prune=True).pruned == []
    assert schedules.get(SCOPE, "hand-made").state == "suspended"
