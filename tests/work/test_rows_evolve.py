"""``rows._evolve``, the batch admission's copy of a frozen Work row, gives what
``dataclasses.replace`` gives, keeps the parsed policy, and refuses unknown fields."""

from __future__ import annotations

import dataclasses

import pytest

from durable_schedule.evaluation.policy import RetryPolicy
from durable_schedule.work import codec, rows


def _row() -> rows.WorkRow:
    values = dict.fromkeys(rows._FIELDS)
    values.update(id=7, attempt=0, lease_generation=3, open_permits=0, last_permit_no=0,
                  state="pending",
                  retry_policy=codec.canonical_json(RetryPolicy().to_json(), "retry_policy"))
    return rows.WorkRow(**values)


def test_evolve__equals_dataclasses_replace_and_leaves_the_original():
    row = _row()
    changes = dict(state="running", attempt=1, lease_owner="w", lease_generation=4)
    evolved = rows._evolve(row, **changes)
    assert evolved == dataclasses.replace(row, **changes)
    assert type(evolved) is rows.WorkRow
    assert (row.state, row.attempt, row.lease_generation) == ("pending", 0, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolved.state = "pending"


def test_evolve__carries_the_parsed_policy():
    row = _row()
    policy = row.policy
    assert rows._evolve(row, attempt=1).policy is policy


def test_evolve__refuses_a_name_that_is_not_a_field():
    with pytest.raises(TypeError, match="not a WorkRow field"):
        rows._evolve(_row(), bogus=1)
