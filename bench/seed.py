"""Bulk-loading schedules: one prototype per shape, then ``INSERT ... SELECT generate_series``.

A prototype schedule is created through the public API (``schedules.create``) when it exists, so
the copies carry exactly the spec, target snapshot and dispatch row the processor expects; before
the API existed (and in the smoke test) a synthetic prototype with the same columns is written
as the owner. The copies replace only ``schedule_id``: definition, generation and dispatch rows
are copied column by column, generated identity columns excepted. Triggers are off during the
copy (``session_replication_role = replica``, superuser only): the rows are copies of valid rows,
and a per-row NOTIFY or history trigger would make a 1M-row load minutes long.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg

from bench import common

#: The frozen instant prototypes are created at; schedules fire first at T0 + their interval.
T0 = datetime(2030, 1, 1, tzinfo=UTC)
DUE_INTERVAL = timedelta(hours=1)
IDLE_INTERVAL = timedelta(days=30)
#: The instant the bench passes run at: every DUE schedule has exactly one nominal instant
#: (T0 + 1 h) in (cursor, cutoff], one second late (well inside the default safety window).
T_RUN = T0 + DUE_INTERVAL + timedelta(seconds=1)
SCOPE = "bench"
NOOP_WORK = "bench.noop"

_COPIED = ("durable_schedule_definition", "durable_schedule_generation",
           "durable_schedule_dispatch")


def synthetic_prototype(conn: psycopg.Connection, schedule_id: str, interval: timedelta) -> None:
    """Write one Every schedule as the owner, the way the store's own test seed does."""
    us = int(interval / timedelta(microseconds=1))
    spec = json.dumps({"interval_us": us, "anchor": None})
    target = json.dumps({"work_name": NOOP_WORK, "work_version": "v1", "payload": {}})
    conn.execute(
        "insert into durable_schedule_scope (scope_id) values (%s) on conflict do nothing",
        [SCOPE],
    )
    conn.execute(
        """insert into durable_schedule_definition (scope_id, schedule_id, runtime_epoch,
               scope_generation, cursor_utc, created_at, updated_at)
           values (%(scope)s, %(sid)s, 1, 1, %(t0)s, %(t0)s, %(t0)s)""",
        {"scope": SCOPE, "sid": schedule_id, "t0": T0},
    )
    conn.execute(
        """insert into durable_schedule_generation (scope_id, schedule_id, generation, kind, spec,
               accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,
               evaluator_version, created_by)
           values (%(scope)s, %(sid)s, 1, 'every', %(spec)s, %(t0)s, %(target)s, 'queue_one',
                   'run_once', interval '1 hour', 'ds-eval-v1', 'bench')""",
        {"scope": SCOPE, "sid": schedule_id, "spec": spec, "t0": T0, "target": target},
    )
    conn.execute(
        """insert into durable_schedule_dispatch (scope_routing_id, schedule_id, due_at)
           select routing_id, %(sid)s, %(due)s from durable_schedule_scope
            where scope_id = %(scope)s""",
        {"scope": SCOPE, "sid": schedule_id, "due": T0 + interval},
    )
    conn.commit()


def _copy_columns(conn: psycopg.Connection, table: str) -> list[str]:
    rows = conn.execute(
        """select column_name from information_schema.columns
            where table_schema = current_schema() and table_name = %s
              and is_identity = 'NO' and is_generated = 'NEVER'
            order by ordinal_position""",
        [table],
    ).fetchall()
    return [r[0] for r in rows]


def replicate(conn: psycopg.Connection, prototype: str, prefix: str, count: int,
              chunk: int = 200_000) -> None:
    """Copy the prototype's definition, generation and dispatch rows ``count`` times as
    ``{prefix}{i:07d}``; commits each chunk."""
    conn.execute("set session_replication_role = replica")
    try:
        for start in range(1, count + 1, chunk):
            stop = min(count, start + chunk - 1)
            for table in _COPIED:
                cols = _copy_columns(conn, table)
                select = ", ".join(
                    "%(prefix)s || lpad(i::text, 7, '0')" if c == "schedule_id" else f"t.{c}"
                    for c in cols
                )
                conn.execute(
                    f"insert into {table} ({', '.join(cols)}) select {select}"  # noqa: S608
                    f" from {table} t, generate_series(%(a)s::int, %(b)s::int) i"
                    " where t.schedule_id = %(proto)s",
                    {"prefix": prefix, "a": start, "b": stop, "proto": prototype},
                )
            conn.commit()
    finally:
        conn.execute("set session_replication_role = origin")
        conn.commit()


def history(conn: psycopg.Connection, n: int) -> None:
    """``n`` finished occurrences with succeeded Work of retired schedules (see seed.sql)."""
    conn.execute(common.queries("seed.sql")["history"],
                 {"scope": SCOPE, "n": n, "at": T0 - timedelta(days=1)})
    conn.commit()


def drop_prototypes(conn: psycopg.Connection, prototypes: list[str]) -> None:
    """Remove the prototypes' dispatch rows so only the copies are claimed (their definitions
    stay: the generation table is append-only and its foreign key needs them)."""
    conn.execute(
        "delete from durable_schedule_dispatch where schedule_id = any(%s)", [prototypes]
    )
    conn.commit()


PROTOTYPES = (("proto-due", DUE_INTERVAL), ("proto-idle", IDLE_INTERVAL))
PROTO_WORK = "proto-work"
#: Created only when schedules.Cron exists: the cron variant of the schedule scenario.
CRON_PROTOTYPE = "proto-cron"
PROTO_DB = common.PREFIX + "proto"


def build_prototypes() -> dict[str, bool]:
    """``ds_bench_proto``: the migrated template plus the prototypes every scenario copies —
    Every(1 h) ``proto-due``, Every(30 days) ``proto-idle`` and one no-op Work ``proto-work`` —
    created through the public API at the frozen instant T0 when the runtime has it (else the
    synthetic schedules, and no Work). Returns which runtime parts exist."""
    from bench import ours

    url = common.create_db(PROTO_DB, template=common.TEMPLATE_DB)
    with psycopg.connect(url) as conn:
        common.set_clock(conn, T0)
    caps = common.run_processes(ours.prototypes_child, [(url,)], timeout=180)[0]["caps"]
    if not caps["schedules_create"]:
        with psycopg.connect(url) as conn:
            for schedule_id, interval in PROTOTYPES:
                synthetic_prototype(conn, schedule_id, interval)
    return caps


def drop_all_prototypes(conn: psycopg.Connection) -> None:
    """After copying: no prototype schedule or Work stays claimable."""
    drop_prototypes(conn, [name for name, _ in PROTOTYPES] + [CRON_PROTOTYPE])
    conn.execute("delete from durable_work_dispatch where work_ref in"
                 " (select id from durable_work where command_id = %s)", [PROTO_WORK])
    conn.commit()
