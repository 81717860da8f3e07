"""What a ``--loop`` runner does besides its passes: heartbeat, metrics port, stop summary.

``durable_schedule.runner.service.serve`` calls :func:`start` before its loop, hands
:meth:`RunnerHooks.after_pass` to the loop (called with every pass's counts, what a failed
attempt committed included), calls :meth:`RunnerHooks.stop` on the way out (also after an
error) and :func:`log_stop` once it stopped (``failed=True`` when an error ended it). Kept here
so the loop's own code stays about passes, waits and retries.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from durable_schedule import conf
from durable_schedule.observability import logs, metrics
from durable_schedule.observability.heartbeat import Heartbeat

log = logging.getLogger("durable_schedule.runner")

_metrics_server_lock = threading.Lock()
_metrics_server_port: int | None = None


class RunnerHooks:
    def __init__(self, heartbeat: Heartbeat) -> None:
        self.heartbeat = heartbeat

    def after_pass(self, counts: dict[str, Any]) -> dict[str, Any]:
        self.heartbeat.record_pass(counts)
        return counts

    def stop(self) -> None:
        self.heartbeat.stop()


def _default_owner() -> str:
    from durable_schedule.processor.processor import default_lease_owner

    return default_lease_owner()


def start(queue: str, *, lease_owner: str | None = None) -> RunnerHooks:
    """Write the first heartbeat, start the beating thread and, when ``METRICS_PORT`` is set,
    this process's metrics server (once per process)."""
    _serve_metrics_once()
    beat = Heartbeat(queue, lease_owner=lease_owner or _default_owner())
    beat.start()
    log.info("%s runner %s registered (heartbeat every %ss)", queue, beat.runner_id,
             seconds_text(beat.interval),
             extra={"runner": queue, "runner_id": str(beat.runner_id)})
    return RunnerHooks(beat)


def seconds_text(seconds: float) -> str:
    """``10``, ``2.25``, ``0.2``, ``0.005``: the setting as written (up to six significant
    digits), never ``0`` for a positive interval below one second."""
    return f"{seconds:g}"


def _serve_metrics_once() -> None:
    global _metrics_server_port
    port = conf.metrics_port()
    if port is None:
        return
    with _metrics_server_lock:
        if _metrics_server_port is None:
            metrics.serve_process_metrics(port)
            _metrics_server_port = port
            log.info("serving runner metrics on port %d", port)


def log_stop(queue: str, stats: Any, *, failed: bool = False) -> str:
    return logs.log_stop_summary(queue, stats, failed=failed)
