"""Reported by reading the code: "a claimed schedule whose scope row disappears (or is disabled)
between the claim and the step fails the pass". Not reachable: a scope has no disabled state
(its row is routing id, scope id, generation and timestamps; re-provisioning bumps the
generation, which the step's fence suspends as ``scope_generation_mismatch``), and the scope row
cannot be deleted while a claimed schedule exists: its definition and its dispatch row
reference the scope row with no ``ON DELETE`` action, so the delete is refused (even by the
superuser) and the claimed step proceeds as usual, single-step and batched."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from durable_schedule import schedules
from durable_schedule.processor.batch import process_batch
from tests.schedules.conftest import (
    HOUR,
    OWNER,
    SCOPE,
    SECOND,
    T0,
    create,
    leave_transaction_forms,
    process,
    rows,
    take_claims,
    works,
)

pytestmark = pytest.mark.django_db


def test_a_scope_has_no_disabled_state():
    columns = {r[0] for r in rows("select column_name from information_schema.columns"
                                  " where table_name = 'durable_schedule_scope'")}
    assert columns == {"routing_id", "scope_id", "generation", "created_at", "updated_at"}


@pytest.mark.parametrize("batch_size", [1, 100], ids=["single-step", "batched"])
def test_the_scope_row_of_a_claimed_schedule_cannot_be_deleted(clock, target, batch_size):
    for n in range(3):
        create(f"s{n}", schedules.Every(HOUR), target)
    clock.set(T0 + HOUR + SECOND)
    claims = take_claims(max_rows=10)
    assert len(claims) == 3
    with pytest.raises(IntegrityError, match="foreign key"), transaction.atomic():
        rows("delete from durable_schedule_scope where scope_id = %s returning 1", (SCOPE,))
    assert rows("select count(*) from durable_schedule_scope where scope_id = %s",
                (SCOPE,)) == [(1,)]
    if batch_size == 1:
        actions = [process(c).action for c in claims]
    else:
        try:
            actions = [o.action for o in process_batch(claims, OWNER).outcomes.values()]
        finally:
            leave_transaction_forms()
    assert actions == ["nominal"] * 3
    assert len(works()) == 3
