"""docs/work.md "Accepting Work", Bulk: when an item of an ``enqueue_many`` call is refused
(DS207 against stored Work, DS233 a tampered row), the error names the refused items,
``context["refused_items"]``, as positions in the caller's list. The same identity may appear
several times in one call (one Work when the facts agree): every position holding a refused
identity is refused, so every one is named -- not only the first."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule import work
from durable_schedule.errors import IdempotencyConflict, WorkFactsTampered
from tests.work.conftest import count
from tests.work.test_enqueue_many import request

pytestmark = pytest.mark.django_db


def test_refused_items__every_position_of_a_conflicting_identity_is_named(clock):
    work.enqueue("tenant-a", request(0))
    other = request(0, payload={"row": "changed"})
    batch = [request(9), other, request(8), other, other]
    with pytest.raises(IdempotencyConflict) as raised:
        work.enqueue_many("tenant-a", batch)
    assert raised.value.context["refused_items"] == [
        (1, "conflict"), (3, "conflict"), (4, "conflict")]
    assert count("durable_work") == 1


def test_refused_items__positions_stay_in_list_order_across_identities(clock):
    work.enqueue("tenant-a", request(0))
    work.enqueue("tenant-a", request(1))
    a, b = request(0, payload={"row": "a"}), request(1, payload={"row": "b"})
    with pytest.raises(IdempotencyConflict) as raised:
        work.enqueue_many("tenant-a", [b, a, request(5), b])
    assert raised.value.context["refused_items"] == [
        (0, "conflict"), (1, "conflict"), (3, "conflict")]
    assert count("durable_work") == 2


def test_refused_items__a_tampered_row_held_twice_is_named_twice(clock):
    work.enqueue("tenant-a", request(0))
    with connection.cursor() as cur:  # changed by SQL after acceptance, as the owner
        cur.execute("update durable_work set payload = '{\"row\": 99}'::jsonb")
    with pytest.raises(WorkFactsTampered) as raised:
        work.enqueue_many("tenant-a", [request(0), request(7), request(0)])
    assert raised.value.context["refused_items"] == [(0, "tampered"), (2, "tampered")]
    assert count("durable_work") == 1
