"""A request due at or after its own absolute deadline is refused at acceptance (DS218).
Admission needs ``due_at <= now < deadline`` (the deadline is exclusive), so such Work could
never run: before the fix it was accepted, stored and later ended ``expired`` without one
attempt. Nothing is written, and a batch is refused whole."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo.work import touch

from durable_schedule import work
from durable_schedule.errors import DueAfterDeadline
from tests.conftest import T0

pytestmark = pytest.mark.django_db
SCOPE = "tenant-a"
DEADLINE = T0 + timedelta(hours=1)


def request(key: str, due_at):
    return touch.request(command="c", idempotency_key=key, payload={}, deadline=DEADLINE,
                         due_at=due_at)


@pytest.mark.parametrize("due_at", [DEADLINE, DEADLINE + timedelta(days=1)], ids=["at", "after"])
def test_enqueue__due_at_or_after_the_deadline_is_refused_and_writes_nothing(clock, due_at):
    with pytest.raises(DueAfterDeadline) as caught:
        work.enqueue(SCOPE, request("k1", due_at))
    assert caught.value.code == "DS218"
    assert caught.value.context["due_at"] == due_at.isoformat()
    assert caught.value.context["deadline"] == DEADLINE.isoformat()
    assert "refused_items" not in caught.value.context
    with pytest.raises(DueAfterDeadline):
        touch.enqueue(scope=SCOPE, command="c", idempotency_key="k2", payload={},
                      deadline=DEADLINE, due_at=due_at)
    assert work.list(SCOPE) == []


def test_enqueue__due_just_before_the_deadline_is_accepted(clock):
    accepted = work.enqueue(SCOPE, request("k1", DEADLINE - timedelta(microseconds=1)))
    assert accepted.created
    assert work.get(SCOPE, accepted.work_id).state == "pending"


def test_enqueue__a_due_time_without_a_deadline_is_not_bounded(clock):
    accepted = touch.enqueue(scope=SCOPE, command="c", idempotency_key="k1", payload={},
                             due_at=T0 + timedelta(days=365))
    assert accepted.created


def test_enqueue_many__one_unrunnable_item_refuses_the_whole_call(clock):
    good = request("k1", T0)
    bad = [request("k2", DEADLINE), request("k3", DEADLINE + timedelta(seconds=1))]
    with pytest.raises(DueAfterDeadline) as caught:
        work.enqueue_many(SCOPE, [good, bad[0], good, bad[1]])
    assert caught.value.context["refused_items"] == [1, 3]
    assert caught.value.context["idempotency_key"] == "k2"
    assert work.list(SCOPE) == []  # the good item was not written either
    assert [a.created for a in work.enqueue_many(SCOPE, [good])] == [True]
