"""docs/protocol/conventions.md rule C2: the schedule protocol's SQL lives in named blocks of
store/sql/schedule_queries.sql; every block is used by the code, and no block is dead."""

from __future__ import annotations

import re
from pathlib import Path

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
