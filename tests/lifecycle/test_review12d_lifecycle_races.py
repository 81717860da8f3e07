"""Run-now, backfill, pause and resume racing two real ``process_schedules`` processes that are
claiming and materializing the same schedules. Whatever the interleaving: each run-now request
is one manual occurrence and one Work (a repeat returns it), a backfill is one occurrence per
instant, paused schedules stay paused with their dispatch row disarmed, nothing is duplicated
and every occurrence's Work exists exactly once."""

from __future__ import annotations

import pytest
from django.db import transaction

from durable_schedule import schedules
from tests.schedules import processes
from tests.schedules.conftest import SCOPE, SECOND, T0, TEN, rows

pytestmark = pytest.mark.django_db(transaction=True)
COUNT = 24


def test_trigger_backfill_pause_resume__racing_two_processor_processes(committed_clock, target):
    with transaction.atomic():
        for i in range(COUNT):
            schedules.create(
                SCOPE,
                f"lc-{i:02d}",
                schedules.Every(TEN, anchor=T0 - 6 * TEN),
                target,
                overlap="allow_all",
            )
    committed_clock.set(T0 + 3 * TEN + SECOND)
    racers = [
        processes.start(
            "--max-schedules",
            "2",
            "--claim-batch",
            "1",
            "--passes",
            "40",
            "--lease-owner",
            f"lc-racer-{n}",
        )
        for n in range(2)
    ]
    first = racers[0].stdout.readline()
    assert first.startswith("pass "), first
    triggered, backfilled, paused = {}, {}, set()
    for i in range(COUNT):
        sid = f"lc-{i:02d}"
        triggered[sid] = schedules.trigger(SCOPE, sid, f"now-{sid}", actor="ops").work_id
        if i % 3 == 0:
            schedules.pause(SCOPE, sid, "freeze", actor="ops")
            paused.add(sid)
        if i % 2 == 1:
            done = schedules.backfill(
                SCOPE, sid, T0 - 5 * TEN, T0 - 4 * TEN, f"bf-{sid}", actor="ops"
            )
            backfilled[sid] = [w for _, w in done.ran]
        if i % 6 == 3:  # paused, then resumed while the racers run
            schedules.pause(SCOPE, sid, "blip", actor="ops")
            schedules.resume(SCOPE, sid, actor="ops")
            paused.discard(sid)
    outputs = [p.communicate(timeout=300) for p in racers]
    for proc, (_, err) in zip(racers, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]

    # Repeats of every request return what the first made, and create nothing.
    for sid, work_id in triggered.items():
        again = schedules.trigger(SCOPE, sid, f"now-{sid}", actor="ops")
        assert (again.work_id, again.created) == (work_id, False)
    for sid, ran in backfilled.items():
        again = schedules.backfill(SCOPE, sid, T0 - 5 * TEN, T0 - 4 * TEN, f"bf-{sid}", actor="ops")
        assert [w for _, w in again.ran] in ([], ran)

    assert sorted(
        rows("select schedule_id from durable_schedule_definition where state = 'paused'")
    ) == sorted((s,) for s in paused)
    assert rows(
        "select count(*) from durable_schedule_dispatch where due_at is not null"
        " and schedule_id = any(%s)",
        (sorted(paused),),
    ) == [(0,)]
    manual = dict(
        rows(
            "select schedule_id, count(*) from durable_schedule_occurrence"
            " where kind = 'manual' group by schedule_id"
        )
    )
    assert manual == {sid: 1 for sid in triggered}
    # Every occurrence's Work exists once and no Work belongs to two occurrences.
    [(linked, distinct, works)] = rows(
        "select count(o.work_id), count(distinct o.work_id), (select count(*) from durable_work)"
        " from durable_schedule_occurrence o"
    )
    assert linked == distinct == works
    assert (
        rows(
            "select schedule_id, kind, first_nominal_utc, count(*)"
            " from durable_schedule_occurrence group by 1, 2, 3 having count(*) > 1"
        )
        == []
    )
    # A backfill's instants were run once each (by the backfill, never again by a pass).
    for ran in backfilled.values():
        assert len(ran) == len(set(ran)) == 2
    assert rows(
        "select schedule_id, count(*) from durable_schedule_occurrence"
        " where kind = 'recovery' and first_nominal_utc < %s group by 1 order by 1",
        (T0,),
    ) == [(sid, 2) for sid in sorted(backfilled)]


def test_two_syncs_and_a_processor_at_once_on_a_paused_declared_schedule(committed_clock):
    """Two deploy hosts run ``sync_schedules`` at once while a processor runs, on a declared
    schedule an operator paused: it stays paused (no generation, no un-pause), runs nothing,
    and both syncs succeed."""
    import io
    import subprocess
    import sys

    from django.core.management import call_command

    call_command("sync_schedules", stdout=io.StringIO())
    before = schedules.get("demo", "demo-hourly-touch")
    schedules.pause("demo", "demo-hourly-touch", "deploy freeze", actor="ops")
    paused = schedules.get("demo", "demo-hourly-touch")
    committed_clock.set(T0 + 50 * TEN)  # several of its instants are due, were it active
    assert before.next_nominal_utc < T0 + 50 * TEN
    env = processes.environment()
    sync = [sys.executable, "testproject/manage.py", "sync_schedules"]
    procs = [
        subprocess.Popen(
            sync,
            cwd=processes.ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    procs.append(processes.start("--passes", "5", "--lease-owner", "lc-sync-racer"))
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    info = schedules.get("demo", "demo-hourly-touch")
    assert info.state == "paused"
    assert (info.generation, info.revision) == (before.generation, paused.revision)
    assert rows(
        "select count(*) from durable_schedule_occurrence where scope_id = 'demo'"
        " and schedule_id = 'demo-hourly-touch'"
    ) == [(0,)]
