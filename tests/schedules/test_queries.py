"""docs/protocol/conventions.md rule C2: the schedule protocol's SQL lives in named blocks of
store/sql/schedule_queries.sql; every block is used by the code, and no block is dead."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.db import connection

from durable_schedule.store import sqlfiles

ROOT = Path(__file__).resolve().parents[2] / "durable_schedule"


def test_schedule_queries__every_named_block_is_used_by_the_schedule_code():
    names = set(sqlfiles.queries("schedule_queries.sql"))
    assert names
    code = "".join(p.read_text() for folder in ("schedules", "processor")
                   for p in (ROOT / folder).glob("*.py"))
    used = set(re.findall(r'\b(?:run\(\s*[\w.]+,|statement\()\s*"([a-z_]+)"', code))
    assert used == names, (names - used, used - names)


def test_lifecycle_queries__every_named_block_is_used_by_the_code():
    names = set(sqlfiles.queries("lifecycle_queries.sql"))
    code = "".join(p.read_text() for p in ROOT.rglob("*.py"))
    used = set(re.findall(r'\brun_lifecycle\(\s*[\w.]+,\s*"([a-z_]+)"', code))
    assert names and used == names, (names - used, used - names)


def test_schedule_batch_queries__every_named_block_is_used_by_the_processor():
    names = set(sqlfiles.queries("schedule_batch_queries.sql"))
    assert names
    code = "".join(p.read_text() for p in (ROOT / "processor").glob("*.py"))
    used = set(re.findall(r'\b(?:run_batch\(\s*[\w.]+,|batch_statement\()\s*"([a-z_]+)"', code))
    assert used == names, (names - used, used - names)


@pytest.mark.django_db
def test_finish_steps__a_row_without_its_link_keys_reads_as_one_with_null_links():
    """batch._Batch._step_row leaves the link columns out when there is no link to write: the
    statement's jsonb_to_recordset must read those rows exactly as rows carrying nulls."""
    text = sqlfiles.query("schedule_batch_queries.sql", "finish_steps")
    columns = re.search(r"jsonb_to_recordset\(%\(rows\)s::jsonb\)\s+AS (s\(.*?\))\n", text,
                        re.S).group(1)
    step = {"schedule_id": "s-1", "revision": 3, "old_cursor": "2030-01-01T00:00:00+00:00",
            "new_cursor": "2030-01-01T01:00:00+00:00", "dispatch_revision": 2,
            "due_at": "2030-01-01T02:00:00+00:00", "generation": 1, "event": "materialized",
            "detail": {"action": "nominal", "link": {"created": True}}}
    nulls = {**step, "link_id": None, "work_id": None, "command": None,
             "idempotency_key": None}
    with connection.cursor() as cur:
        cur.execute(f"SELECT to_jsonb(s)::text FROM jsonb_to_recordset(%s::jsonb) AS {columns}",
                    [json.dumps([step, nulls])])
        without, with_nulls = (row[0] for row in cur.fetchall())
    assert without == with_nulls
    assert json.loads(without)["link_id"] is None and json.loads(without)["revision"] == 3
