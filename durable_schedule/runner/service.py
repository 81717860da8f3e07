"""What the ``--loop`` flags of ``process_schedules`` and ``process_work`` run (issue 5 item 1).

``serve()`` wires a pass function into :func:`durable_schedule.runner.loop.run_loop` with the
queue's NOTIFY channel, the database's own "seconds until the next due row" (PostgreSQL decides
due-ness; Python only sizes its sleep), SIGTERM/SIGINT handling and, for the schedule runner,
daily partition maintenance under an advisory lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from durable_schedule.observability import runner_hooks
from durable_schedule.operations.partitions import ensure_partitions
from durable_schedule.runner import committed, outage
from durable_schedule.runner.loop import LoopStats, StopFlag, run_loop
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import connection

log = logging.getLogger("durable_schedule.runner")

CHANNELS = {"schedule": "durable_schedule_due", "work": "durable_work_due"}


# The store's durable_schedule_seconds_until_due reads every Work queue; a runner serving some
# of them reads those (the same table, the same privileges, the (queue_name, ...) index; idle
# path only). Over every queue, due Work of a queue nobody serves read as "due now" to a runner
# of another queue, which then ran empty passes back to back instead of sleeping.
_WORK_SECONDS_UNTIL_DUE_IN = """
select extract(epoch from min(due_at) - durable_schedule_clock('clock'))::double precision
  from durable_work_dispatch
 where due_at is not null and queue_name = any(%s)
"""


def seconds_until_due(queue: str, *, using: str | None = None,
                      queues: tuple[str, ...] | None = None) -> float | None:
    """Seconds until the earliest due row of ``queue`` (negative: overdue; None: nothing due);
    for "work", of the Work ``queues`` named (None: every queue)."""
    with connection(using).cursor() as cur:
        if queue == "work" and queues is not None:
            cur.execute(_WORK_SECONDS_UNTIL_DUE_IN, [list(queues)])
        else:
            cur.execute(query("operations_queries.sql", "seconds_until_due"), [queue])
        value = cur.fetchone()[0]
    return None if value is None else float(value)


def _maintain_partitions() -> None:
    created = ensure_partitions(wait=False)
    if created:
        log.info("created history partitions %s", ", ".join(created))


def _serves(queues: tuple[str, ...]) -> Callable[[str], bool]:
    wanted = frozenset(queues)
    # An empty payload comes from a wake-up that names no queue (schema 7 and older triggers).
    return lambda payload: payload == "" or payload in wanted


def serve(
    queue: str,
    run_once: Callable[[StopFlag], dict[str, int]],
    *,
    stop: StopFlag | None = None,
    max_passes: int | None = None,
    install_signals: bool = True,
    lease_owner: str | None = None,
    queues: tuple[str, ...] | None = None,
) -> LoopStats:
    """Run ``run_once(stop)`` passes until SIGTERM/SIGINT (or ``stop``); returns the totals.
    ``queues``: the Work queues the passes serve; a wake-up for another queue is ignored."""
    if queue not in CHANNELS:
        raise ValueError(f"unknown queue {queue!r}")
    stop = stop or StopFlag()
    if install_signals:
        stop.install_signal_handlers()
    log.info("%s runner started", queue, extra={"runner": queue})
    # The database served, learnt before the heartbeat's first write; from then on every new
    # connection of the process (a pass's own retry, the heartbeat thread's reconnect, the stop
    # record) that reaches another database is refused with DS446 (runner/outage.py).
    identity = outage.ServerIdentity()
    identity.learn()
    with identity.watching(queue):
        return _serve_watched(queue, run_once, stop=stop, max_passes=max_passes,
                              lease_owner=lease_owner, queues=queues, identity=identity)


def _serve_watched(queue: str, run_once: Callable[[StopFlag], dict[str, int]], *,
                   stop: StopFlag, max_passes: int | None, lease_owner: str | None,
                   queues: tuple[str, ...] | None,
                   identity: outage.ServerIdentity) -> LoopStats:
    hooks = runner_hooks.start(queue, lease_owner=lease_owner)  # heartbeat, metrics port
    try:
        stats = run_loop(
            name=queue,
            run_once=lambda: run_once(stop),
            after_pass=hooks.after_pass,  # every pass's counts, committed work of failed ones too
            channel=CHANNELS[queue],
            seconds_until_due=lambda: seconds_until_due(queue, queues=queues),
            stop=stop,
            maintenance=_maintain_partitions if queue == "schedule" else None,
            max_passes=max_passes,
            wakes_for=None if queues is None else _serves(queues),
            identity=identity,
        )
    except BaseException as exc:
        ended = committed.loop_stats_of(exc)
        if ended is not None:  # what committed before the error is still summed up
            runner_hooks.log_stop(queue, ended, failed=True)
        raise
    finally:
        hooks.stop()
    runner_hooks.log_stop(queue, stats)  # the one stop summary (docs/operations.md "Logging")
    return stats
