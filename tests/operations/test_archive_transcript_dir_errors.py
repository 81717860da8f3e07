"""``durable_partitions --archive-before`` with a transcript directory it cannot write: a path
that is not a directory is refused (DS428) before any month is detached; a transcript that
fails mid-run is DS428 naming the month, which stays detached (owner only) and undropped, and a
rerun once the directory is fixed completes it (docs/operations.md "Retention")."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.operations.test_archive import JAN, attached, january_history, tables  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("january_history")]


def archive_and_drop(transcript_dir, stdout=None) -> None:
    """``durable_partitions --archive-before 2030-02 --transcript-dir DIR --drop``."""
    call_command(
        "durable_partitions",
        "--archive-before",
        "2030-02",
        "--transcript-dir",
        str(transcript_dir),
        "--drop",
        stdout=StringIO() if stdout is None else stdout,
    )


def test_transcript_dir_that_is_a_file__ds428_and_nothing_detached(tmp_path):
    not_a_dir = tmp_path / "transcripts"
    not_a_dir.write_text("an operator's notes\n")
    for where in (not_a_dir, not_a_dir / "sub"):
        with pytest.raises(CommandError) as caught:
            archive_and_drop(where)
        text = str(caught.value)
        assert text.startswith("DS428: --transcript-dir is not a directory"), text
        assert "nothing was detached" in text
        assert JAN in attached()
    assert not_a_dir.read_text() == "an operator's notes\n"


def test_transcript_failing_mid_run__ds428_month_kept_detached_and_a_rerun_completes(tmp_path):
    blocker = tmp_path / f"{JAN}.jsonl"
    blocker.mkdir()  # the transcript cannot replace a directory: fails after the detach
    with pytest.raises(CommandError) as caught:
        archive_and_drop(tmp_path)
    text = str(caught.value)
    assert text.startswith(
        "DS428: the transcript could not be written: the month stays "
        "detached and nothing was dropped"
    ), text
    assert f"table='{JAN}'" in text
    assert JAN not in attached() and JAN in tables("durable_schedule_history_%")

    blocker.rmdir()
    out = StringIO()
    archive_and_drop(tmp_path, out)
    assert f"{JAN}: 2 rows -> " in out.getvalue() and ", dropped" in out.getvalue()
    assert JAN not in tables("durable_schedule_history_%")
    lines = (tmp_path / f"{JAN}.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["scope_id"] for line in lines) == ["tenant-a", "tenant-b"]
