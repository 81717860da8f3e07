"""Issue 12 item 6: old history partitions are detached, transcribed (JSONL + sha256) and only
dropped after the transcript is verified; the current month is never archived (DS428)."""

from __future__ import annotations

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from durable_schedule.errors import PartitionArchiveRefused
from durable_schedule.operations.archive import archive_before
from tests.store.seed import seed_scope

pytestmark = pytest.mark.django_db


JAN = "durable_schedule_history_203001"


def jan(outcomes):
    """The January 2030 outcome (the migration made partitions for the real months too)."""
    return {o.table: o for o in outcomes}[JAN]


def tables(like: str) -> list[str]:
    with connection.cursor() as cur:
        cur.execute("select relname from pg_class where relname like %s and relkind in"
                    " ('r', 'p') order by 1", [like])
        return [r[0] for r in cur.fetchall()]


def attached() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid"
                    " where i.inhparent = 'durable_schedule_history'::regclass order by 1")
        return [r[0] for r in cur.fetchall()]


@pytest.fixture
def january_history(clock):
    """History rows in January 2030 (the clock's month) for two scopes, then the clock moves
    to March: January is archivable, March is not."""
    call_command("durable_partitions", stdout=StringIO())  # 203001, 203002
    with connection.cursor() as cur:
        seed_scope(cur, "tenant-a", "a")
        seed_scope(cur, "tenant-b", "b")
        cur.execute("update durable_schedule_dispatch set due_at = null")
        cur.execute("insert into durable_schedule_history (scope_id, schedule_id, generation,"
                    " event, detail, recorded_at) values"
                    " ('tenant-a', 'a', 1, 'updated', '{\"n\": 1}', %s),"
                    " ('tenant-b', 'b', 1, 'updated', '{\"n\": 2}', %s)",
                    [clock.now, clock.now])
    clock.set(clock.now.replace(month=3))
    call_command("durable_partitions", stdout=StringIO())  # 203003, 203004
    return clock


def test_archive__detaches_transcribes_and_drops_after_verification(january_history, tmp_path):
    outcome = jan(archive_before("2030-02", tmp_path, drop=True, dry_run=False))
    assert (outcome.table, outcome.detached, outcome.dropped) == (
        "durable_schedule_history_203001", True, True)
    body = (tmp_path / "durable_schedule_history_203001.jsonl").read_bytes()
    records = [json.loads(line) for line in body.splitlines()]
    assert outcome.rows == len(records) == 2
    assert sorted((r["scope_id"], r["event"], r["detail"]) for r in records) == [
        ("tenant-a", "updated", {"n": 1}), ("tenant-b", "updated", {"n": 2})]
    digest = (tmp_path / "durable_schedule_history_203001.jsonl.sha256").read_text().split()
    assert digest == [hashlib.sha256(body).hexdigest(), "durable_schedule_history_203001.jsonl"]
    assert "durable_schedule_history_203001" not in tables("durable_schedule_history_%")
    assert "durable_schedule_history_203002" in attached()  # not before the cutoff month


def test_archive__without_drop_keeps_a_detached_table_the_runtime_cannot_read(
        january_history, tmp_path):
    outcome = jan(archive_before("2030-02", tmp_path, drop=False, dry_run=False))
    assert outcome.detached and not outcome.dropped
    assert "durable_schedule_history_203001" not in attached()
    assert "durable_schedule_history_203001" in tables("durable_schedule_history_%")
    with connection.cursor() as cur:
        cur.execute("select has_table_privilege('durable_runtime', "
                    "'durable_schedule_history_203001', 'SELECT')")
        assert cur.fetchone()[0] is False
    # A later run drops it once the transcript matches.
    again = jan(archive_before("2030-02", tmp_path, drop=True, dry_run=False))
    assert (again.detached, again.dropped, again.rows) == (False, True, 2)


def test_archive__a_tampered_transcript_refuses_the_drop(january_history, tmp_path):
    archive_before("2030-02", tmp_path, drop=False, dry_run=False)
    path = tmp_path / "durable_schedule_history_203001.jsonl"
    path.write_bytes(path.read_bytes().replace(b"tenant-b", b"tenant-x"))
    # archive_before rewrites the transcript before it drops; the drop step itself verifies
    # what is on disk against the table, so a transcript changed after writing is refused.
    sums = tmp_path / "durable_schedule_history_203001.jsonl.sha256"
    from durable_schedule.operations import archive as module

    with pytest.raises(PartitionArchiveRefused) as err:
        module._verify_and_drop(connection, "durable_schedule_history_203001", tmp_path)
    assert err.value.code == "DS428"
    sums.unlink()
    with pytest.raises(PartitionArchiveRefused, match="no transcript"):
        module._verify_and_drop(connection, "durable_schedule_history_203001", tmp_path)
    assert "durable_schedule_history_203001" in tables("durable_schedule_history_%")


def test_archive__dry_run_changes_nothing(january_history, tmp_path):
    outcome = jan(archive_before("2030-02", tmp_path / "t", drop=True, dry_run=True))
    assert outcome.notes == ["would detach", "would write a transcript and drop"]
    assert "durable_schedule_history_203001" in attached()
    assert not (tmp_path / "t").exists()


def test_archive__refuses_a_cutoff_after_the_current_month_and_bad_months(clock, tmp_path):
    for month in ("2030-02", "2031-01"):
        with pytest.raises(PartitionArchiveRefused) as err:
            archive_before(month, tmp_path, drop=True, dry_run=False)
        assert err.value.code == "DS428"
    for bad in ("2030-13", "203001", "Jan 2030"):
        with pytest.raises(PartitionArchiveRefused):
            archive_before(bad, tmp_path, drop=False, dry_run=False)


def test_archive__refuses_a_cutoff_before_the_earliest_month_and_changes_nothing(clock,
                                                                                 tmp_path):
    # Year 0000 does not exist and no store holds history from before 2000: such a cutoff is
    # a typo, refused like the other bounds (DS428) before anything is read or written.
    before = attached()
    for bad in ("0000-01", "0001-01", "1999-12"):
        with pytest.raises(PartitionArchiveRefused, match="2000-01 or later") as err:
            archive_before(bad, tmp_path / "t", drop=True, dry_run=False)
        assert err.value.code == "DS428"
        with pytest.raises(CommandError, match="DS428"):
            call_command("durable_partitions", "--archive-before", bad, "--transcript-dir",
                         str(tmp_path / "t"), "--drop", stdout=StringIO())
    assert attached() == before
    assert not (tmp_path / "t").exists()
    assert archive_before("2000-01", tmp_path / "t", drop=False, dry_run=True) == []


def test_archive__the_current_month_cutoff_archives_only_earlier_months(january_history,
                                                                        tmp_path):
    outcomes = archive_before("2030-03", tmp_path, drop=False, dry_run=False)
    archived = [o.table for o in outcomes]
    assert archived[-2:] == [JAN, "durable_schedule_history_203002"]
    assert all(t < JAN for t in archived[:-2])  # the real months the migration created
    assert "durable_schedule_history_203003" in attached()


def test_partitions_command__archive_options(january_history, tmp_path):
    out = StringIO()
    call_command("durable_partitions", "--archive-before", "2030-02", "--transcript-dir",
                 str(tmp_path), "--drop", stdout=out)
    assert "durable_schedule_history_203001: detached, 2 rows ->" in out.getvalue()
    assert ", dropped" in out.getvalue()
    with pytest.raises(CommandError, match="--transcript-dir"):
        call_command("durable_partitions", "--archive-before", "2030-02", stdout=StringIO())
    with pytest.raises(CommandError, match="need --archive-before"):
        call_command("durable_partitions", "--drop", stdout=StringIO())
