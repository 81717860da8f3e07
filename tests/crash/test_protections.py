"""The last line of the crash-proof protections: the store's own keys.

No crash of the processor can produce a second row for the same occurrence identity or Work
identity (the decision, the cursor move and the bridge commit together, under the definition row
lock), so the crash tests cannot see these keys go missing (docs/reliability.md "Break checks").
They are pinned here directly: whatever a future bug writes, PostgreSQL refuses the duplicate.
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from tests.conftest import T0

pytestmark = [pytest.mark.crash, pytest.mark.django_db]


def execute(sql: str, params=()) -> None:
    with connection.cursor() as cur:
        cur.execute(sql, params)


def insert_occurrence(kind: str = "nominal", state: str = "materialized") -> None:
    execute("insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,"
            " first_nominal_utc, last_nominal_utc, state, created_at, updated_at)"
            " values ('crash-a', 's', 1, %s, %s, %s, %s, %s, %s)",
            (kind, T0, T0, state, T0, T0))


def refused(fn, *args, **kwargs) -> bool:
    try:
        with transaction.atomic():
            fn(*args, **kwargs)
    except IntegrityError:
        return True
    return False


def test_store__refuses_a_second_occurrence_with_the_same_identity(clock):
    insert_occurrence()
    assert refused(insert_occurrence)
    assert refused(insert_occurrence, "nominal", "pending")


def test_store__refuses_a_second_pending_coalesced_occurrence_per_schedule(clock):
    insert_occurrence("coalesced", "pending")
    assert refused(lambda: execute(
        "insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,"
        " first_nominal_utc, last_nominal_utc, state, created_at, updated_at)"
        " values ('crash-a', 's', 1, 'coalesced', %s, %s, 'pending', %s, %s)",
        (T0.replace(hour=13), T0.replace(hour=13), T0, T0)))


def test_store__refuses_a_second_work_with_the_same_identity(clock, touch):
    with transaction.atomic():
        touch.enqueue(scope="crash-a", command="c-1", idempotency_key="k-1", payload={})
    with connection.cursor() as cur:
        cur.execute("select column_name from information_schema.columns"
                    " where table_name = 'durable_work' and column_name <> 'id'"
                    " order by ordinal_position")
        columns = [r[0] for r in cur.fetchall()]

    def copy(**replace: str) -> None:
        chosen = ", ".join(replace.get(c, c) for c in columns)
        execute(f"insert into durable_work ({', '.join(columns)})"
                f" select {chosen} from durable_work")

    assert refused(copy)  # the same Work id, command and idempotency key
    assert refused(copy, work_id="gen_random_uuid()")  # the same command and key
    assert refused(copy, command_id="'c-2'", idempotency_key="'k-2'")  # the same Work id
    copy(work_id="gen_random_uuid()", command_id="'c-2'")  # a different identity is accepted
