"""The ``--loop`` ticker: ``run_once()`` plus a thin loop that logs and never dies of a hiccup
(docs/protocol/conventions.md rule C6, River's maintenance services; docs/protocol/runner.md).

Honest latency posture (docs/operations.md): after a pass that did work the loop runs the next
pass at once. After an idle pass it sleeps until the earliest due time it can see, capped by
``MAX_IDLE_SECONDS`` (default 5 s), and a ``NOTIFY`` sent by the store when a dispatch row becomes
due sooner (insert, requeue, retry) wakes it early — in practice within milliseconds. The
listener is self-tested when it is opened (runner/pooler.py): without working NOTIFY (a pooler in
transaction mode accepts LISTEN but never delivers) the loop says so once and polls, so a newly
due schedule is noticed at most ``MAX_IDLE_SECONDS`` late.

Outages: a pass that still fails with a lost connection after its transient retries makes the
loop wait for the database (runner/outage.py) for up to ``OUTAGE_TOLERANCE_SECONDS``, then carry
on with a fresh listener; past that it exits with DS405. A database that answers but is not
the one the loop served (another system identifier or database oid) ends the loop with DS446
before anything runs against it: every new connection of the process is checked
(``outage.ServerIdentity.watching``), after an outage and on a pass's own retried reconnect.

Stopping: SIGTERM/SIGINT/SIGHUP set a flag (a second one changes nothing). The pass in progress
runs to the end of its current transaction (each schedule or Work item is its own transaction;
the cancellation check happens before every new lease), then the loop exits 0. A lease held by a
process that dies anyway expires after its duration (<= 10 minutes) and another runner takes the
row over.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg

from durable_schedule import conf
from durable_schedule.runner import committed, outage, pooler, state
from durable_schedule.runner.retry import run_with_retry
from durable_schedule.work.broken_connections import note_connection_loss

log = logging.getLogger("durable_schedule.runner")

#: Seconds between partition maintenance runs of a schedule loop (docs/protocol/storage.md
#: partitions).
PARTITION_INTERVAL_SECONDS = 24 * 3600


class StopFlag:
    """Set by SIGTERM/SIGINT/SIGHUP (or a test); checked before every new lease."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self, *_args) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    __call__ = is_set

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)

    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.set)
        # SIGHUP (a closed terminal, a supervisor's HUP) stops like SIGTERM, so the heartbeat
        # records the stop; a process started with SIGHUP ignored (nohup) keeps ignoring it.
        hup = getattr(signal, "SIGHUP", None)
        if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:
            signal.signal(hup, self.set)


@dataclass
class LoopStats:
    passes: int = 0
    busy_passes: int = 0
    totals: dict[str, int] = field(default_factory=dict)


def _listen_connection(name: str, channel: str) -> psycopg.Connection | None:
    """A separate autocommit connection that LISTENs, once a self-test notification reached it;
    None (poll) when it cannot be opened or notifications do not arrive."""
    return _open_listener(name, channel)[0]


def _open_listener(name: str, channel: str) -> tuple[psycopg.Connection | None, bool]:
    """The listener (or None: poll), and whether to try again after the next good pass: yes when
    the connection could not be opened or broke during the self-test (the database was away,
    starting up, or out of connection slots: a later attempt can succeed), no when it opened
    and NOTIFY does not deliver (a pooler in transaction mode gives the same answer again)."""
    conn = None
    try:
        conn = psycopg.connect(**pooler.connection_params(), autocommit=True)
        if not pooler.notify_works(conn):
            # Said once per process: after a reconnect the same pooler gives the same answer.
            already = state.snapshot().get(name, {}).get("notify_ok") is False
            say = log.info if already else log.warning
            say("%s runner: LISTEN/NOTIFY does not deliver on this connection (a pooler in "
                "transaction mode?); polling every %.1fs instead (docs/operations.md "
                "\"Prepared statements and connection poolers\")", name, conf.max_idle_seconds(),
                extra={"runner": name, "notify": "fallback"})
            state.notify_checked(name, ok=False)
            conn.close()
            return None, False
        conn.execute(f"LISTEN {channel}")  # last: pg_stat_activity then shows this LISTEN
        state.notify_checked(name, ok=True)
        return conn, False
    except psycopg.Error as exc:
        # Said once per unavailability: it is tried again after every good pass.
        already = state.snapshot().get(name, {}).get("notify_ok") is False
        say = log.info if already else log.warning
        say("%s runner: LISTEN %s unavailable, polling every %.1fs until the next pass"
            " succeeds: %s", name, channel, conf.max_idle_seconds(), exc,
            extra={"runner": name, "notify": "fallback"})
        state.notify_checked(name, ok=False)
        if conn is not None:
            conn.close()
        return None, True


def run_loop(
    *,
    name: str,
    run_once: Callable[[], dict[str, int]],
    channel: str,
    seconds_until_due: Callable[[], float | None],
    stop: StopFlag,
    maintenance: Callable[[], None] | None = None,
    max_passes: int | None = None,
    wakes_for: Callable[[str], bool] | None = None,
    after_pass: Callable[[dict[str, int]], object] | None = None,
    identity: outage.ServerIdentity | None = None,
) -> LoopStats:
    """Run passes until ``stop`` is set. ``run_once`` returns counts; a pass "did work" when it
    claimed something. Transient errors are retried by ``run_with_retry``;
    any other error propagates (the command exits non-zero with the error chain).

    What an attempt committed before it raised (runner/committed.py) is carried into the next
    pass that completes (its log line, ``after_pass``, the totals); when the loop ends first
    (stopped during an outage, or an error), into the totals and ``after_pass`` as one more
    pass. ``after_pass(counts)`` sees every pass's counts (the heartbeat).

    ``identity``: the database the loop serves, already watching every new connection
    (``serve`` starts it before the heartbeat); without it the loop learns and watches its own."""
    if identity is None:
        identity = outage.ServerIdentity()
        identity.learn()
        with identity.watching(name):
            return run_loop(name=name, run_once=run_once, channel=channel,
                            seconds_until_due=seconds_until_due, stop=stop,
                            maintenance=maintenance, max_passes=max_passes, wakes_for=wakes_for,
                            after_pass=after_pass, identity=identity)
    stats = LoopStats()
    listener, listener_lost = _open_listener(name, channel)
    last_maintenance = 0.0
    budget = outage.Budget()  # one outage lasts until a pass succeeds again
    carried: Counter = Counter()  # committed by attempts that raised, not yet counted

    def attempt() -> dict[str, int]:
        try:
            return run_once()
        except BaseException as exc:  # an interrupt too: the loop's end still counts it
            carried.update(committed.of(exc))
            raise

    def count(counts: dict[str, int]) -> dict[str, int]:
        stats.passes += 1
        for key, value in counts.items():
            stats.totals[key] = stats.totals.get(key, 0) + value
        if after_pass is not None:
            after_pass(counts)
        return counts

    def count_leftover() -> None:
        if carried:  # the last pass raised after committing some work: still counted
            leftover = dict(carried)
            carried.clear()
            count(leftover)
            log.info("%s pass %d (ended by an error): %s", name, stats.passes,
                     " ".join(f"{k}={v}" for k, v in leftover.items()),
                     extra={"runner": name, "counts": leftover})

    try:
        verify_identity = False
        while not stop.is_set():
            try:
                if identity.changed is not None:  # another thread's connection found it
                    identity.check(name)
                if verify_identity:  # after an outage, before any pass: DS446 for another
                    identity.check(name)  # database; a lost connection here is one more loss
                    verify_identity = False
                since = time.monotonic() - last_maintenance
                if maintenance is not None and since > PARTITION_INTERVAL_SECONDS:
                    run_with_retry(f"{name}.maintenance", maintenance)
                    last_maintenance = time.monotonic()
                counts = run_with_retry(f"{name}.pass", attempt)
            except Exception as exc:
                if not outage.is_connection_loss(exc):
                    raise
                note_connection_loss()  # the slot threads check theirs before their next job
                if listener is not None:
                    listener.close()
                    listener = None
                if not outage.ride_out(name, exc, stop, budget=budget):
                    break  # stopped while waiting: nothing is in flight
                verify_identity = True
                listener, listener_lost = _open_listener(name, channel)
                continue
            budget.reset()
            # A pass that claimed anything may have left more due rows behind it: go again.
            busy = counts.get("claimed", 0) > 0
            if carried:
                counts = dict(counts)
                for key, value in carried.items():
                    counts[key] = counts.get(key, 0) + value
                carried.clear()
            count(counts)
            log.info("%s pass %d: %s", name, stats.passes,
                     " ".join(f"{k}={v}" for k, v in counts.items()),
                     extra={"runner": name, "counts": counts})
            if identity.changed is not None:  # a connection of this pass, or a beat, found
                identity.check(name)  # another database: DS446, counted what committed here
            if max_passes is not None and stats.passes >= max_passes:
                break
            if busy:
                stats.busy_passes += 1
                continue
            if listener_lost:  # the database answered this pass: listen again
                listener, listener_lost = _open_listener(name, channel)
            if not _idle_wait(listener, stop, seconds_until_due, wakes_for):
                listener.close()
                listener, listener_lost = None, True
    except BaseException as exc:
        count_leftover()
        committed.note_loop(exc, stats)  # the command still reports what committed
        raise
    finally:
        if listener is not None:
            listener.close()
    count_leftover()
    return stats


def _idle_wait(listener, stop: StopFlag, seconds_until_due: Callable[[], float | None],
               wakes_for: Callable[[str], bool] | None = None) -> bool:
    """Sleep until the next due time, a notification or ``stop``; False when the listener's
    connection broke (the caller drops it and listens again after the next good pass).
    ``wakes_for(payload)`` false: a notification for a queue this runner does not serve (the
    Work wake-up names its queue) does not wake it."""
    cap = conf.max_idle_seconds()
    try:
        until = run_with_retry("loop.next_due", seconds_until_due)
    except Exception as exc:  # the pass itself will surface a persistent problem
        log.warning("could not read the next due time: %s", exc)
        until = None
    wait = cap if until is None else max(0.0, min(cap, until))
    if wait <= 0:
        return True
    deadline = time.monotonic() + wait
    while not stop.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        slice_ = min(remaining, 0.25)  # short slices keep SIGTERM responsive
        if listener is None:
            stop.wait(slice_)
            continue
        try:
            for note in listener.notifies(timeout=slice_):
                if wakes_for is None or wakes_for(note.payload):
                    return True
        except psycopg.Error as exc:
            log.warning("LISTEN connection lost, polling until the next pass: %s", exc)
            stop.wait(remaining)
            return False
    return True
