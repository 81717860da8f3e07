"""The drift check reads its facts set-based (store/drift.py): a metrics scrape runs it
(``durable_schedule_store_up``), and it sent one statement per table, role, column and
function -- 158 statements per scrape of the test project's store. Now a fixed handful,
whatever the number of tables, history partitions and columns; every drift kind is still
reported (tests/store/test_review7c_drift.py, tests/store/test_pinned_search_path.py)."""

from __future__ import annotations

import pytest
from django.db import connection

from durable_schedule.observability.metrics import exposition
from durable_schedule.store import inspection

pytestmark = pytest.mark.django_db


class Recorder:
    """A ``connection.execute_wrapper`` counting the statements sent."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        self.sql.append(str(sql))
        return execute(sql, params, many, context)


def statements_of_the_check() -> int:
    recorder = Recorder()
    with connection.execute_wrapper(recorder), connection.cursor() as cur:
        assert inspection.grant_problems(cur) == []
    return len(recorder.sql)


def test_the_check__sends_a_fixed_handful_of_statements():
    assert statements_of_the_check() <= 20


def test_the_check__sends_as_many_statements_with_more_history_partitions():
    before = statements_of_the_check()
    with connection.cursor() as cur:
        for month in ("01", "02", "03"):
            cur.execute(f"create table durable_schedule_history_2001{month} partition of"
                        f" durable_schedule_history for values from ('2001-{month}-01') to"
                        f" ('2001-{month}-28')")
            cur.execute(f"select durable_schedule_secure_history_child("
                        f"'durable_schedule_history_2001{month}')")
    assert statements_of_the_check() == before


def test_a_metrics_scrape__reads_the_store_in_few_statements():
    pytest.importorskip("prometheus_client")
    recorder = Recorder()
    with connection.execute_wrapper(recorder):
        body, _ = exposition()
    assert b"durable_schedule_store_up 1.0" in body
    # 26 today: the drift check (its role-membership and definer queries included), the gauges,
    # and the probe bound of the read (a savepoint, SET LOCAL, its restore, the release).
    # Fixed whatever the store's size; the per-object form sent 158.
    assert len(recorder.sql) <= 30, len(recorder.sql)


@pytest.mark.parametrize("statement,expected", [
    ("revoke update (state) on durable_work from durable_runtime",
     "durable_runtime lacks UPDATE (state) on durable_work"),
    ("revoke select (lease_owner) on durable_schedule_dispatch from durable_dispatcher",
     "durable_dispatcher lacks SELECT (lease_owner) on durable_schedule_dispatch"),
    ("revoke execute on function claim_schedule_dispatch(text, interval, integer)"
     " from durable_dispatcher",
     "durable_dispatcher lacks EXECUTE on claim_schedule_dispatch(text, interval, integer)"),
    ("grant execute on function claim_schedule_dispatch(text, interval, integer) to public",
     "PUBLIC may EXECUTE claim_schedule_dispatch(text, interval, integer)"),
    ("revoke select on durable_work from durable_runtime",
     "durable_runtime lacks SELECT on durable_work"),
])
def test_the_set_based_reads__still_find_each_missing_grant(statement, expected):
    with connection.cursor() as cur:
        cur.execute(statement)
        found = inspection.grant_problems(cur)
    assert expected in found, found
