"""Review rvops: ``durable_partitions --archive-before`` -- a dry run refuses the transcript
directory the real run would refuse (a dry run that answers "would write a transcript" and a
real run that then says DS428 is not a rehearsal), a path with a NUL is DS428 rather than a
traceback, and a month written with non-ASCII digits is "not a month" rather than "after the
current month" (docs/operations.md "Archiving history partitions")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.operations.test_archive import attached, january_history  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("january_history")]


def archive(transcript_dir: str, *extra: str) -> str:
    out = StringIO()
    call_command("durable_partitions", "--archive-before", "2030-02", "--transcript-dir",
                 transcript_dir, "--drop", *extra, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("dry_run", [True, False])
def test_transcript_dir_that_cannot_be_written__ds428_in_a_dry_run_too(tmp_path, dry_run):
    not_a_dir = tmp_path / "notes"
    not_a_dir.write_text("an operator's notes\n")
    before = attached()
    for where in (str(not_a_dir), str(not_a_dir / "sub"), str(tmp_path / "a\x00b")):
        with pytest.raises(CommandError) as caught:
            archive(where, *(["--dry-run"] if dry_run else []))
        assert str(caught.value).startswith("DS428: --transcript-dir is not a directory"), \
            str(caught.value)
    assert attached() == before
    assert not_a_dir.read_text() == "an operator's notes\n"


def test_dry_run_into_a_directory_still_to_be_made__lists_and_creates_nothing(tmp_path):
    where = tmp_path / "audit" / "2030"
    assert "would write a transcript and drop" in archive(str(where), "--dry-run")
    assert not (tmp_path / "audit").exists()


@pytest.mark.parametrize("month", ["２０３０-01", "2030-٠١", "2O30-01"])
def test_a_month_in_other_digits_is_not_a_month(tmp_path, month):
    with pytest.raises(CommandError) as caught:
        call_command("durable_partitions", "--archive-before", month, "--transcript-dir",
                     str(tmp_path), "--dry-run", stdout=StringIO())
    assert str(caught.value).startswith("DS428: --archive-before must be a month YYYY-MM")


@pytest.mark.parametrize("option", ["--older-than", "--margin"])
@pytest.mark.parametrize("value", ["３０d", "٣٠d", "3０h"])
def test_prune_ages_in_other_digits_are_refused_and_change_nothing(option, value):
    """docs/operations.md "Retention": a whole number with a unit m, h, d or w; a value in
    other digits was read as that number (int("３０") is 30) and pruned."""
    args = ["--older-than", value] if option == "--older-than" else [
        "--older-than", "30d", "--margin", value]
    with pytest.raises(CommandError) as caught:
        call_command("durable_prune", *args, "--dry-run", stdout=StringIO())
    code = "DS427" if option == "--older-than" else "DS442"
    assert str(caught.value).startswith(f"{code}: {option} must be a whole number")
