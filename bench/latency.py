"""Scenario 4b: end-to-end latency from a schedule's due instant to its Work's start.

``LOADS`` Every(1 s) schedules are created through the API on the real database clock, then
runners work for ``seconds``: latency of each Work = ``attempt_started_at`` (set by the runtime
when it admits the attempt) - ``first_nominal_utc`` of the occurrence it came from (the due
instant). Both are database clock values, so Python's clock never enters the figure.

Runners: ``process_schedules --loop`` and ``process_work --loop``, each in its own child process
through ``call_command`` (the bench's no-op Work definition must be registered in the worker's
process, as a user's ``<app>/work.py`` is by autodiscovery), stopped with SIGTERM, when both
commands have ``--loop``; otherwise one child
process that alternates bounded passes, ``process_due(max_schedules=100)`` then
``process_work_pass(max_items=100)``, and sleeps ``POLL_SECONDS`` after a pass that found
nothing — a stand-in for the loop, and the report says which one ran.
"""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import time
from datetime import timedelta

import psycopg

from bench import common, seed

RUN_DB = common.PREFIX + "latency"
#: Two loads: a light one (the floor: polling and one pass) and a burst (all schedules share
#: one phase, so every second 50 occurrences fall due together and queue behind each other).
LOADS = (5, 50)
INTERVAL = timedelta(seconds=1)
POLL_SECONDS = 0.05

_LATENCIES = """
SELECT extract(epoch FROM (w.attempt_started_at - o.first_nominal_utc)) * 1000
  FROM durable_work w
  JOIN durable_schedule_occurrence o
    ON o.scope_id = w.scope_id AND o.id = w.source_occurrence_id
 WHERE w.attempt_started_at IS NOT NULL
 ORDER BY 1
"""


def loop_commands_exist(url: str) -> bool:
    """Both runners have ``--loop`` (asked through ``manage.py <command> --help``)."""
    for command in ("process_schedules", "process_work"):
        done = subprocess.run(
            [sys.executable, str(common.TESTPROJECT / "manage.py"), command, "--help"],
            env=common.django_env(url), capture_output=True, text=True, timeout=60)
        if done.returncode != 0 or "--loop" not in done.stdout:
            return False
    return True


def create_child(barrier, url: str, n: int) -> dict:
    common.setup_django(url)
    from bench import ours
    from durable_schedule import schedules

    target = ours.noop_definition().target(payload={})
    barrier.wait(60)
    t0 = time.monotonic()
    for i in range(n):
        schedules.create(scope=seed.SCOPE, schedule_id=f"lat-{i:04d}",
                         spec=schedules.Every(INTERVAL), target=target)
    return {"count": n, "t0": t0, "t1": time.monotonic()}


def passes_child(barrier, url: str, seconds: float) -> dict:
    common.setup_django(url)
    from bench import ours

    ours.noop_definition()
    process_due, work_pass = ours.process_due_fn(), ours.work_pass_fn()
    barrier.wait(60)
    t0 = time.monotonic()
    passes = 0
    while time.monotonic() - t0 < seconds:
        scheduled = process_due(max_schedules=100, lease_owner="bench-lat",
                                lease_duration=timedelta(seconds=60))
        worked = work_pass(max_items=100, lease_owner="bench-lat-w")
        passes += 1
        if ours.claimed(scheduled) == 0 and ours.work_claimed(worked) == 0:
            time.sleep(POLL_SECONDS)
    return {"count": passes, "t0": t0, "t1": time.monotonic()}


def loop_child(url: str, command: str) -> None:
    """``manage.py <command> --loop`` in this process (``call_command``), after registering the
    bench's no-op Work as a user's app module would; stops on SIGTERM like the real command."""
    common.setup_django(url)
    from django.core.management import call_command

    from bench import ours

    ours.noop_definition()
    call_command(command, "--loop", verbosity=0)


def _run_loops(url: str, seconds: float) -> None:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=loop_child, args=(url, cmd), daemon=True)
             for cmd in ("process_schedules", "process_work")]
    for p in procs:
        p.start()
    try:
        time.sleep(seconds)
    finally:
        for p in procs:
            p.terminate()  # SIGTERM: the loop finishes its current item and exits 0
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join(timeout=10)


def measure_all(seconds: float, loads: tuple[int, ...] = LOADS) -> list[dict]:
    return [measure(seconds, n) for n in loads]


def measure(seconds: float, schedules_n: int) -> dict:
    url = common.create_db(RUN_DB, template=common.TEMPLATE_DB)
    try:
        use_loop = loop_commands_exist(url)
        common.run_processes(create_child, [(url, schedules_n)], timeout=120)
        if use_loop:
            _run_loops(url, seconds)
        else:
            common.run_processes(passes_child, [(url, seconds)], timeout=seconds + 120)
        with psycopg.connect(url) as conn:
            values = [float(r[0]) for r in conn.execute(_LATENCIES).fetchall()]
        return {
            "runner": "--loop" if use_loop else "repeated bounded passes",
            "schedules": schedules_n, "interval_s": INTERVAL.total_seconds(),
            "seconds": seconds, "work_started": len(values),
            "p50_ms": common.percentile(values, 50) if values else None,
            "p99_ms": common.percentile(values, 99) if values else None,
            "max_ms": values[-1] if values else None,
        }
    finally:
        common.drop_db(RUN_DB)
