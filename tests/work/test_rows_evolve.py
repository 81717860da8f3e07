"""``rows._evolve``, the batch admission's copy of a frozen Work row, gives what
``dataclasses.replace`` gives, keeps the parsed policy, and refuses unknown fields; ``rows._parse``
builds the row the dataclass ``__init__`` builds."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

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


# ----------------------------------------------------------- _parse builds the row __init__ makes
def _head(facts: bool = True) -> tuple:
    when = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)
    work = (7, "s1", uuid.UUID(int=3), "cmd", "key", "t.job", "v1", '{"a": [1, 2]}',
            "idempotent", "v1", '{"maximum_attempts": 3}', None, None, when, when, "pending", 0,
            None, None, 0, None, None, None, None, None, None, None, None, None)
    return work + ((None, None, 0, 2, 5, "w", when) if facts else ())


class _FactsCursor:
    def __init__(self, facts: tuple) -> None:
        self.facts, self.params = facts, None

    def execute(self, sql, params):
        self.params = params

    def fetchone(self):
        return self.facts


def test_parse__the_row_the_dataclass_init_makes():
    head = _head()
    row = rows._parse(None, head)
    want = rows.WorkRow(*head[:7], {"a": [1, 2]}, *head[8:])
    assert row == want and row.__dict__ == want.__dict__
    assert type(row) is rows.WorkRow and not hasattr(rows.WorkRow, "__post_init__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.state = "running"  # type: ignore[misc]


def test_parse__facts_from_the_second_statement_and_wrong_lengths_refused():
    full = _head()
    cur = _FactsCursor(full[len(rows._WORK_COLUMNS):])
    row = rows._parse(cur, _head(facts=False))
    assert row == rows._parse(None, full)
    assert cur.params == {"id": 7, "scope_id": "s1", "work_id": uuid.UUID(int=3)}
    with pytest.raises(ValueError):
        rows._parse(None, full[:10])
    with pytest.raises(ValueError):
        rows._parse(None, full + (1,))
    with pytest.raises(ValueError):
        rows._parse(_FactsCursor((1, 2)), _head(facts=False))
