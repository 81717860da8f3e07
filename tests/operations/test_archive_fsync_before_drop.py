"""``durable_partitions --archive-before ... --drop``: the transcript, its checksum file and
their directory reach the disk (fsync) before the table is dropped, so a crash right after the
drop cannot lose the only copy of the month (docs/operations.md "Archiving history
partitions")."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from durable_schedule.operations.archive import archive_before
from tests.operations.test_archive import JAN, january_history  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def test_archive__transcript_file_and_directory_are_fsynced_before_the_drop(
        january_history, tmp_path, monkeypatch):  # noqa: F811
    events: list[tuple[str, str]] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        events.append(("fsync", os.path.realpath(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def drop_watch(execute, sql, params, many, context):
        if sql.lstrip().lower().startswith("drop table"):
            events.append(("drop", sql))
        return execute(sql, params, many, context)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    with connection.execute_wrapper(drop_watch):
        outcomes = {o.table: o for o in archive_before("2030-02", tmp_path, drop=True,
                                                       dry_run=False)}
    assert outcomes[JAN].dropped
    drops = [i for i, (kind, sql) in enumerate(events) if kind == "drop" and JAN in sql]
    assert len(drops) == 1
    before = {path for kind, path in events[:drops[0]] if kind == "fsync"}
    directory = os.path.realpath(tmp_path)
    assert os.path.join(directory, f"{JAN}.jsonl") in before
    assert os.path.join(directory, f"{JAN}.jsonl.sha256") in before
    assert directory in before

