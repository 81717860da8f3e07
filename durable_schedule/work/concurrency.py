"""``process_work --concurrency N`` (issue 16 item 3; docs/work.md "Concurrency",
docs/operations.md "Sizing --concurrency, batches and connections").

One shared claim/outcome pipeline in the calling thread, N execution slots:

* the pipeline claims and admits in batch transactions (:func:`.pipeline.admit_batch`) at most
  one claim beyond the N slots (sized by :mod:`.sizing`, ``batch`` at most), so a freed slot
  starts the next admitted attempt at once;
  a waiting attempt's budget keeps running from its admission and is checked right before it
  starts (an over-budget one is handed back as ``not_invoked``);
* a synchronous executor runs on one of N pool threads (each with its own Django connection,
  opened only if the executor uses the database); an ``async def`` executor runs on the
  process's event loop (:mod:`.aio`) and holds a slot but no thread;
* the pipeline waits for completions and group-commits every outcome that arrived in one
  transaction (:func:`.pipeline.record_outcomes`) before it claims again;
* every running attempt's lease is renewed by its watchdog (:mod:`.executor`), whichever slot
  it runs in;
* when ``stop()`` turns true (SIGTERM under ``--loop``) the pipeline claims nothing more, lets
  the running attempts finish within their leases, commits their outcomes, and returns; an
  attempt a pool thread had not started yet is handed back.

The pool threads live as long as the process (a ``--loop`` runner reuses them pass after pass,
so their connections are not reopened per pass); a pool of another size replaces it once
no pass runs on it any more.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable

from django.db import connections

from durable_schedule.barriers import (
    WORK_EFFECT_BEFORE_OUTCOME,
    WORK_PERMIT_AFTER_COMMIT,
    barrier,
)
from durable_schedule.work import aio, clock
from durable_schedule.work.broken_connections import (
    check_after_loss,
    drop_broken_connections,
    new_job_health_check,
)
from durable_schedule.work.outcome import AttemptOutcome
from durable_schedule.work.passes import (
    commit_outcomes,
    per_item_round,
    record_duration,
    stopping,
)
from durable_schedule.work.pipeline import admit_batch
from durable_schedule.work.runtime import (
    Options,
    invoke,
    invoke_async,
    is_async,
    process_one,
    release,
)
from durable_schedule.work.sizing import ClaimSizer


class _Pool:
    """N daemon threads running jobs from one queue; each closes its connections on shutdown."""

    def __init__(self, size: int) -> None:
        self.size = size
        #: Passes running on this pool now (guarded by ``_pool_lock``).
        self.users = 0
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._serve, name=f"durable-work-slot-{i}",
                                         daemon=True) for i in range(size)]
        for thread in self.threads:
            thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self.jobs.put(job)

    def _serve(self) -> None:
        try:
            while True:
                job = self.jobs.get()
                if job is None:
                    return
                _new_job_health_check()
                check_after_loss()
                job()
        finally:
            connections.close_all()

    def shutdown(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


#: Django's health check per job (work/broken_connections.py), under its historical name.
_new_job_health_check = new_job_health_check


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool(size: int) -> _Pool:
    """The process's pool of ``size`` threads, taken by one pass until :func:`_give_back`.
    A pool of another size is replaced, but retired only once no pass uses it: shut down
    under a running pass (an in-process caller beside the runner with another
    ``concurrency``), that pass's next jobs would wait for ever in a queue no thread serves."""
    global _pool
    retired = None
    with _pool_lock:
        alive = _pool is not None and all(t.is_alive() for t in _pool.threads)
        if not alive or _pool.size != size:
            if _pool is not None and _pool.users == 0:
                retired = _pool
            _pool = _Pool(size)
        _pool.users += 1
        taken = _pool
    if retired is not None:
        retired.shutdown()
    return taken


def _give_back(pool: _Pool) -> None:
    """A pass is done with ``pool``: a replaced pool is shut down once its last pass left."""
    with _pool_lock:
        pool.users -= 1
        retire = pool is not _pool and pool.users == 0
    if retire:
        pool.shutdown()


def shutdown_pool() -> None:
    """Stop the pool threads and close their connections (tests; process exit does it too)."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown()
            _pool = None


def run_concurrent(opts: Options, seconds: float, max_items: int, batch: int, stop,
                   tally: Counter, concurrency: int, sizer: ClaimSizer) -> None:
    pool = _the_pool(concurrency)
    try:
        _run_on(pool, opts, seconds, max_items, batch, stop, tally, concurrency, sizer)
    finally:
        _give_back(pool)


def _run_on(pool: _Pool, opts: Options, seconds: float, max_items: int, batch: int, stop,
            tally: Counter, concurrency: int, sizer: ClaimSizer) -> None:
    done: queue.SimpleQueue = queue.SimpleQueue()
    in_flight = 0
    processed = 0
    drained = False  # the last claim found nothing due
    # Set once the pass is leaving on an interrupt (an executor's KeyboardInterrupt or
    # SystemExit, Ctrl-C): the slots start no attempt after it, they hand the admitted ones
    # back, as a stopping pass does. A database error (the pass retry handles it) does not set
    # it: the attempts already admitted hold committed permits and their slots have their own
    # connections, so they still run and their outcomes are committed before the error leaves.
    halted = threading.Event()

    def halt_on_interrupt(exc: BaseException) -> None:
        if not isinstance(exc, Exception):
            halted.set()

    def run_sync(action, origin) -> None:
        invoking = False
        try:
            if halted.is_set() or stopping(stop):
                outcome = AttemptOutcome("handed_back")
            else:
                barrier(WORK_PERMIT_AFTER_COMMIT)
                started = clock.monotonic()
                invoking = True
                outcome = invoke(action, opts, origin)
                if outcome.kind == "failed":
                    drop_broken_connections()  # a dead connection fails this attempt only
                record_duration(sizer, action, outcome, clock.monotonic() - started)
                barrier(WORK_EFFECT_BEFORE_OUTCOME)
            done.put(("outcome", action, outcome))
        except BaseException as exc:  # noqa: BLE001 -- reported to the pipeline, re-raised
            halt_on_interrupt(exc)
            # Raised before the executor was called (the stop check, say): not started, so
            # handed back, not left to lapse as a crash.
            done.put(("error" if invoking else "unstarted", action, exc))

    def run_item(claim) -> None:
        local: Counter = Counter()
        try:
            if halted.is_set() or stopping(stop):
                local["released"] += release([claim], opts)
            else:
                process_one(claim, opts, local, lambda: halted.is_set() or stopping(stop))
            done.put(("item", None, local))
        except BaseException as exc:  # noqa: BLE001 -- reported to the pipeline, re-raised
            halt_on_interrupt(exc)
            done.put(("error", None, exc))

    # An async executor's interrupt closes the gate and sets ``halted`` before its slot frees.
    gate = aio.Gate(concurrency, stopped=lambda: halted.is_set() or stopping(stop),
                    on_interrupt=halted.set)

    def run_async(action, origin) -> None:
        barrier(WORK_PERMIT_AFTER_COMMIT)
        # Measured from the hand-over to the loop, so a wait for a free gate slot counts too:
        # the estimate errs towards smaller claims, never larger ones.
        started = clock.monotonic()
        future = invoke_async(action, opts, origin, gate)

        def settle(f) -> None:
            try:
                outcome = f.result()
            except BaseException as exc:  # noqa: BLE001 -- reported to the pipeline, re-raised
                halt_on_interrupt(exc)
                done.put(("error", action, exc))
                return
            record_duration(sizer, action, outcome, clock.monotonic() - started)
            barrier(WORK_EFFECT_BEFORE_OUTCOME)
            done.put(("outcome", action, outcome))

        future.add_done_callback(settle)

    # Admitted ahead: up to one claim beyond the slots (sized so an admitted attempt waits about
    # the wait budget at most; ``batch`` is the largest), so a slot that frees takes the next
    # attempt at once instead of waiting for the pipeline's next round trip. Claim again only
    # once the queue has run down to the slots (bigger batches, fewer transactions per item).
    capacity = concurrency + batch
    failure: BaseException | None = None
    pending: list = []  # outcomes that arrived but are not committed yet
    try:
        while True:
            room = capacity - in_flight
            # ``halted``: an interrupt escaped an async slot; its error may reach ``done``
            # after the hand-backs it caused, which must not be claimed again by this pass.
            if (failure is None and not halted.is_set() and in_flight <= concurrency
                    and not drained and processed < max_items and not stopping(stop)):
                n = min(sizer.next_size(batch, concurrency), room, max_items - processed)
                admission = admit_batch(opts, seconds, n)
                if admission.tally.pop("batch_conflicts", 0):
                    processed += per_item_round(opts, seconds, n, stop, tally)
                    continue
                tally.update(admission.tally)
                tally["claimed"] += len(admission.claims)
                processed += len(admission.claims)
                drained = not admission.claims
                for action, origin in admission.admitted:
                    in_flight += 1
                    if is_async(action):
                        run_async(action, origin)
                    else:
                        pool.submit(lambda a=action, o=origin: run_sync(a, o))
                for claim in admission.deferred:
                    in_flight += 1
                    pool.submit(lambda c=claim: run_item(c))
                if admission.claims and in_flight <= concurrency:
                    continue  # fill the slots and the queue before waiting
            if in_flight == 0:
                break
            box = [failure]
            in_flight -= _collect(done, pending, tally, box)
            failure = box[0]
            if failure is not None:
                halt_on_interrupt(failure)
            drained = False  # a completion may have made a retry due: look again
            results, pending[:] = list(pending), []
            commit_outcomes(results, opts, tally)
    except BaseException as exc:
        # The pipeline failed (a database error the pass retry will handle, an interrupt):
        # wait for what is running, so no executor outlives its pass unattended, then try once
        # to commit what they reported; whatever cannot be committed is recovered after its
        # lease like any lost attempt. After an interrupt, attempts not started yet are handed
        # back, not started.
        halt_on_interrupt(exc)
        while in_flight > 0:
            in_flight -= _collect(done, pending, tally, [None])
        try:
            commit_outcomes(pending, opts, tally)
        except Exception:  # noqa: BLE001 -- the original error is the one to report
            pass
        raise
    if failure is not None:
        raise failure


def _collect(done: queue.SimpleQueue, pending: list, tally: Counter, failure_box: list) -> int:
    """Wait for one completion, take every other one that arrived; returns how many."""
    arrived = [done.get()]
    while True:
        try:
            arrived.append(done.get_nowait())
        except queue.Empty:
            break
    for kind, action, value in arrived:
        if kind == "outcome":
            pending.append((action, value))
        elif kind == "item":
            tally.update(value)
        elif kind == "unstarted":
            pending.append((action, AttemptOutcome("handed_back")))
            if failure_box[0] is None:
                failure_box[0] = value
        elif failure_box[0] is None:
            failure_box[0] = value
    return len(arrived)
