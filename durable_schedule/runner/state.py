"""What this process's runners know about their database connection, for metrics and status.

The runner loop writes here; anything that exports figures (a metrics view, a status command in
the same process) reads :func:`snapshot`. Everything is per process and per queue (``schedule``,
``work``) and starts at zero; nothing here is stored in the database.

- ``notify_fallbacks``: times a loop found that LISTEN/NOTIFY does not deliver (the self-test
  notification at loop start or after a reconnect did not arrive, or LISTEN failed) and fell
  back to polling every ``MAX_IDLE_SECONDS``.
- ``notify_ok``: whether the loop's current wake-up channel passed its self-test.
- ``outages`` / ``reconnects``: database outages a ``--loop`` runner met, and the ones it came
  back from; ``connected`` is False while it waits for the database; ``last_outage_seconds`` is
  the length of the last outage that ended.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

_lock = threading.Lock()


@dataclass
class QueueState:
    notify_fallbacks: int = 0
    notify_ok: bool | None = None
    outages: int = 0
    reconnects: int = 0
    connected: bool = True
    last_outage_seconds: float | None = None


_queues: dict[str, QueueState] = {}


def _get(queue: str) -> QueueState:
    return _queues.setdefault(queue, QueueState())


def notify_checked(queue: str, ok: bool) -> None:
    with _lock:
        state = _get(queue)
        state.notify_ok = ok
        if not ok:
            state.notify_fallbacks += 1


def connection_lost(queue: str) -> None:
    with _lock:
        state = _get(queue)
        state.outages += 1
        state.connected = False


def connection_restored(queue: str, seconds: float) -> None:
    with _lock:
        state = _get(queue)
        state.reconnects += 1
        state.connected = True
        state.last_outage_seconds = seconds


def snapshot() -> dict[str, dict]:
    """``{queue: {field: value}}``, a copy."""
    with _lock:
        return {queue: asdict(state) for queue, state in _queues.items()}


def reset() -> None:
    """Forget everything (tests)."""
    with _lock:
        _queues.clear()
