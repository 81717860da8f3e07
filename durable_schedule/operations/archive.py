"""Archiving old schedule history partitions after an exported audit transcript
(docs/operations.md "Retention"; ``manage.py durable_partitions --archive-before``).

Per month before the cutoff (never the current or a later month):

1. **Detach** the month from ``durable_schedule_history`` (one short ACCESS EXCLUSIVE lock;
   ``DETACH ... CONCURRENTLY`` is impossible next to a default partition). The runtime's grants
   on it are revoked: from here on it is an archive only the owner reads.
2. **Transcript**: the owner lifts FORCE ROW LEVEL SECURITY on the detached table (nobody else
   may read it any more) and writes every row, ordered by (recorded_at, id), as one JSON object
   per line to ``<dir>/<table>.jsonl`` plus ``<table>.jsonl.sha256`` in ``sha256sum`` format.
   Reading the detached table whole is what makes the transcript provably complete: under
   forced RLS no query could count the rows of every scope.
3. **Drop** (only with ``drop=True``): the transcript is verified against the table (same row
   count, same bytes, same digest), its two files and their directory are fsynced, and only
   then the table is dropped (DS428 otherwise).

Steps are idempotent: a rerun continues with detached tables that were not yet dropped. The
transcript directory is checked writable before any month is detached; a transcript that fails
to write later is DS428 naming the month, which stays detached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.db import transaction

from durable_schedule.errors import PartitionArchiveRefused
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection

#: ASCII digits only: ``\d`` admits "２０３０-01", which then compared as text after every
#: month and was refused as "after the current month" instead of as no month at all.
_MONTH = re.compile(r"^([0-9]{4})-([0-9]{2})$")
_TABLE = re.compile(r"^durable_schedule_history_[0-9]{6}$")
#: The earliest cutoff accepted. Year 0000 does not exist and no store holds history from
#: before 2000, so an earlier month is a typo: refused (DS428) like the other bounds rather
#: than accepted as a cutoff that silently archives nothing.
MIN_ARCHIVE_MONTH = "2000-01"
_COLUMNS = ("id", "scope_id", "schedule_id", "generation", "event", "actor", "detail",
            "recorded_at")


def _q(name: str) -> str:
    return query("retention_queries.sql", name)


@dataclass
class ArchiveOutcome:
    table: str
    detached: bool = False
    rows: int | None = None
    transcript: str | None = None
    sha256: str | None = None
    dropped: bool = False
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)


def parse_month(text: str) -> str:
    """``2030-01`` -> ``203001`` (the partition suffix)."""
    match = _MONTH.match(text or "")
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise PartitionArchiveRefused("--archive-before must be a month YYYY-MM", got=text)
    if text < MIN_ARCHIVE_MONTH:  # same YYYY-MM shape: string order is month order
        raise PartitionArchiveRefused(
            f"--archive-before must be {MIN_ARCHIVE_MONTH} or later", got=text)
    return f"{match.group(1)}{match.group(2)}"


def archive_before(month: str, transcript_dir: str | Path, *, drop: bool, dry_run: bool,
                   using: str | None = None) -> list[ArchiveOutcome]:
    """Detach, transcribe and (with ``drop``) drop every monthly partition before ``month``."""
    suffix = parse_month(month)
    target = Path(transcript_dir)
    conn = connection(using)
    with conn.cursor() as cur:
        cur.execute(_q("current_month"))
        current: datetime = cur.fetchone()[0]
        if suffix > current.strftime("%Y%m"):
            raise PartitionArchiveRefused(
                f"--archive-before {month} is after the current month "
                f"{current.strftime('%Y-%m')}: only past months may be archived")
        cur.execute(_q("history_partitions"))
        attached = [name for name, _lower in cur.fetchall() if name[-6:] < suffix]
        cur.execute(_q("detached_history_tables"))
        detached = [name for (name,) in cur.fetchall() if name[-6:] < suffix]
    # Before any month is detached; a dry run checks without creating anything, so it
    # refuses the directory the real run would refuse.
    (_would_be_writable if dry_run else _writable)(target)
    outcomes = []
    for table in sorted(set(attached) | set(detached)):
        outcome = ArchiveOutcome(table, dry_run=dry_run)
        if dry_run:
            outcome.notes.append("would detach" if table in attached else "already detached")
            outcome.notes.append("would write a transcript" + (" and drop" if drop else ""))
            outcomes.append(outcome)
            continue
        if table in attached:
            _detach(conn, table)
            outcome.detached = True
        try:
            outcome.rows, outcome.sha256 = _transcribe(conn, table, target)
        except OSError as exc:  # the month stays detached (owner only); a rerun writes it
            raise PartitionArchiveRefused(
                "the transcript could not be written: the month stays detached and nothing "
                "was dropped; fix the directory and run the command again", table=table,
                transcript=str(target / f"{table}.jsonl"),
                cause=f"{type(exc).__name__}: {exc.strerror or exc}") from exc
        outcome.transcript = str(target / f"{table}.jsonl")
        if drop:
            _verify_and_drop(conn, table, target)
            outcome.dropped = True
        outcomes.append(outcome)
    return outcomes


def _writable(target: Path) -> None:
    """DS428 unless ``target`` is (or can be made) a directory this process writes to."""
    probe = target / ".durable_archive_probe"
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise PartitionArchiveRefused(
            "--transcript-dir is not a directory the transcripts can be written to: nothing "
            "was detached", transcript_dir=str(target),
            cause=f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}") from exc


def _would_be_writable(target: Path) -> None:
    """The dry run's :func:`_writable`: DS428 unless ``target`` is a directory this process
    may write to, or could be created (its nearest existing ancestor is one). Creates nothing."""
    if "\x00" in str(target):  # Path.exists() answers False for it rather than raising
        why = "a NUL in the path"
    else:
        existing = target
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        usable = existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)
        why = None if usable else f"{existing} is not a directory this process may write to"
    if why is not None:
        raise PartitionArchiveRefused(
            "--transcript-dir is not a directory the transcripts can be written to (dry run: "
            "nothing was detached)", transcript_dir=str(target), cause=why)


def _ident(table: str) -> str:
    if not _TABLE.match(table):  # names come from pg_class, but never format unchecked text
        raise PartitionArchiveRefused("not a monthly history table", table=table)
    return f'"{table}"'


def _detach(conn, table: str) -> None:
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        cur.execute(f"alter table durable_schedule_history detach partition {_ident(table)}")
        cur.execute(f"revoke all on {_ident(table)} from durable_runtime")


def _rows(conn, table: str) -> list[bytes]:
    """Every row of the detached table as one canonical JSON line (bytes, with newline)."""
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        cur.execute(f"alter table {_ident(table)} no force row level security")
        cur.execute(f"select {', '.join(_COLUMNS)} from {_ident(table)} "
                    "order by recorded_at, id")
        lines = []
        for row in cur.fetchall():
            record = dict(zip(_COLUMNS, row, strict=True))
            detail = record["detail"]
            record["detail"] = json.loads(detail) if isinstance(detail, str) else detail
            record["recorded_at"] = record["recorded_at"].isoformat()
            lines.append((json.dumps(record, sort_keys=True, ensure_ascii=False,
                                     separators=(",", ":")) + "\n").encode())
        return lines


def _transcribe(conn, table: str, target: Path) -> tuple[int, str]:
    lines = _rows(conn, table)
    body = b"".join(lines)
    digest = hashlib.sha256(body).hexdigest()
    path = target / f"{table}.jsonl"
    _write_synced(path, body)  # a crash mid-write never leaves a transcript that looks complete
    _write_synced(target / f"{table}.jsonl.sha256", f"{digest}  {path.name}\n".encode())
    _fsync_path(target)
    return len(lines), digest


def _write_synced(path: Path, body: bytes) -> None:
    """Write ``body`` to ``path`` through a ``.partial`` file that is fsynced before it is
    renamed into place."""
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "wb") as out:
        out.write(body)
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(path)


def _fsync_path(path: Path) -> None:
    """fsync a file or a directory (a directory's entry for a renamed file reaches the disk
    only with the directory's own fsync)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _verify_and_drop(conn, table: str, target: Path) -> None:
    path = target / f"{table}.jsonl"
    sums = target / f"{table}.jsonl.sha256"
    if not path.is_file() or not sums.is_file():
        raise PartitionArchiveRefused("no transcript for the table: refusing to drop it",
                                      table=table, transcript=str(path))
    body = path.read_bytes()
    recorded = sums.read_text().split()[0] if sums.read_text().split() else ""
    expected = b"".join(_rows(conn, table))
    if hashlib.sha256(body).hexdigest() != recorded or body != expected:
        raise PartitionArchiveRefused("the transcript does not match the table: refusing to "
                                      "drop it", table=table, transcript=str(path))
    # The transcript becomes the only copy once the table is dropped: its files and their
    # directory entries reach the disk first (a transcript written by an earlier run, or the
    # page cache of this one, would otherwise be lost by a crash right after the drop).
    try:
        _fsync_path(path)
        _fsync_path(sums)
        _fsync_path(target)
    except OSError as exc:
        raise PartitionArchiveRefused(
            "the transcript could not be synced to disk: refusing to drop the table",
            table=table, transcript=str(path),
            cause=f"{type(exc).__name__}: {exc.strerror or exc}") from exc
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        cur.execute(f"drop table {_ident(table)}")
