"""One bounded pass of the Work runtime: ``process_work_pass(...) -> WorkPassCounts`` (issue 3,
issue 16 items 2 and 3).

The shape follows River's ``run_once`` (docs/protocol/conventions.md rule C6): ``manage.py
process_work`` runs one pass; the ``--loop`` runner calls the same function again and again. A
pass repeats, until ``max_items`` claimed rows were processed, nothing is due, or ``stop()`` is
true:

1. **Claim and admit a batch** in one transaction (:func:`.pipeline.admit_batch`): the permits
   commit before any invocation.
2. **Invoke** the admitted attempts: one after the other in this thread (``concurrency=1``), or
   on the executor pool and the event loop (:mod:`.concurrency`).
3. **Group-commit the outcomes** in one transaction (:func:`.pipeline.record_outcomes`), before
   the next claim, so nothing acknowledged lives only in memory.
4. ``reconcile_before_retry`` claims go through the per-item path (:func:`.runtime.process_one`).

A retry that is due at once (an overdue planned slot) is claimable again within the same pass,
which is how fast failures consume overdue slots in a burst. The stop callable is checked before
every new claim and every invocation; admitted attempts a stopping pass will not start are
handed back (permit ``proven_no_effect``, due again at once), claims it will not admit are
released.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db import connections

from durable_schedule import conf
from durable_schedule.barriers import (
    WORK_EFFECT_BEFORE_OUTCOME,
    WORK_PERMIT_AFTER_COMMIT,
    barrier,
)
from durable_schedule.errors import InvalidArgument, InvalidConcurrency, PassInsideTransaction
from durable_schedule.observability.metrics import instrumented_pass
from durable_schedule.runner import committed
from durable_schedule.runner.retry import run_with_retry
from durable_schedule.work import clock
from durable_schedule.work.executor import unwatch_all
from durable_schedule.work.outcome import AttemptOutcome, record_attempt_outcome, run_followups
from durable_schedule.work.pipeline import admit_batch, record_outcomes
from durable_schedule.work.queues import validate_queues
from durable_schedule.work.rows import LeaseConflict
from durable_schedule.work.runtime import (
    Options,
    WorkPassCounts,
    _claim,
    _validate,
    default_lease_owner,
    invoke,
    process_one,
    release,
)
from durable_schedule.work.sizing import (
    DEFAULT_MAX_BATCH,
    WAIT_BUDGET_SECONDS,
    ClaimSizer,
    local_window,
    sizer_for,
    validate_wait_budget,
)

#: ``--concurrency`` upper bound: each slot may hold a database connection (docs/operations.md).
MAX_CONCURRENCY = 256


def validate_concurrency(concurrency: object) -> int:
    if (isinstance(concurrency, bool) or not isinstance(concurrency, int)
            or not 1 <= concurrency <= MAX_CONCURRENCY):
        raise InvalidConcurrency(f"concurrency must be an int between 1 and {MAX_CONCURRENCY}",
                                 concurrency=concurrency)
    return concurrency


def validate_stop(stop: object) -> None:
    """``stop`` is None or a callable: checked up front, or a bad one failed on first use."""
    if stop is not None and not callable(stop):
        raise InvalidArgument("stop must be None or a callable returning true to end the pass",
                              got=type(stop).__name__)


def validate_heartbeat(heartbeat: object) -> bool:
    """``heartbeat`` is a bool: any other value (``"no"``, 0, None) would be read as its
    truthiness, and ``"no"`` would mean yes."""
    if type(heartbeat) is not bool:
        raise InvalidArgument("heartbeat must be True or False",
                              got=f"{type(heartbeat).__name__} {heartbeat!r}"[:200])
    return heartbeat


def validate_using(using: object) -> str:
    """A database alias of ``DATABASES``: Django's ConnectionDoesNotExist was no DS error."""
    if not isinstance(using, str) or using not in connections.settings:
        raise InvalidArgument("using must name a database alias of DATABASES", got=using)
    return using


def validate_pass_arguments(max_items: object, batch: object, lease_owner: object,
                            lease_seconds: object) -> tuple[str, float]:
    """The pass's lease owner and claim lease seconds (defaults filled in), or the DS-coded
    refusal of a bad ``max_items``, ``batch``, owner or lease. ``process_work`` calls it before
    it touches the database, so a bad argument changes nothing and opens no connection."""
    owner = default_lease_owner() if lease_owner is None else lease_owner
    seconds = conf.lease_seconds() if lease_seconds is None else lease_seconds
    _validate(max_items, batch, owner, seconds)
    return owner, seconds


@instrumented_pass("work")  # metrics + span (docs/operations.md "Metrics")
def process_work_pass(*, max_items: int = 100, lease_owner: str | None = None,
                      lease_seconds: float | None = None, batch: int = DEFAULT_MAX_BATCH,
                      heartbeat: bool = True, stop=None, using: str | None = None,
                      concurrency: int = 1, queues: Iterable[str] | None = None,
                      wait_budget: float = WAIT_BUDGET_SECONDS) -> WorkPassCounts:
    """Process at most ``max_items`` claimed dispatch rows; returns the counts (zero if idle).

    ``lease_seconds`` is the claim lease (how long a claimed row waits for its admission
    transaction; default ``DURABLE_SCHEDULE['LEASE_SECONDS']``); an admitted attempt then holds
    the lease its retry policy names. At most ``batch`` rows are claimed and admitted per
    transaction: each claim is sized from the measured invocation time of recent attempts so an
    admitted attempt waits at most about ``wait_budget`` seconds before it starts (:mod:`.sizing`).
    ``concurrency`` executors run at once (threads; ``async def`` executors on one event loop).
    ``queues`` names the queues this pass serves (None: every queue); the claim takes the
    highest priority first, then the oldest due (docs/work.md "Queues and priorities").
    ``heartbeat`` (a bool) renews leases from a thread while executors run.
    ``stop()`` returning true ends the pass early.
    """
    tally: Counter = Counter()
    try:
        _run_pass(tally, max_items=max_items, lease_owner=lease_owner,
                  lease_seconds=lease_seconds, batch=batch, heartbeat=heartbeat, stop=stop,
                  using=using, concurrency=concurrency, queues=queues, wait_budget=wait_budget)
    except BaseException as exc:
        # What committed before the error is a fact: the loop that retries the pass adds it in.
        committed.note(exc, _counts(tally).as_dict())
        raise
    return _counts(tally)


def process_work_once(*, max_items: int = 100, **options) -> WorkPassCounts:
    """``process_work_pass`` under the runner's bounded transient retry (``process_work``
    without ``--loop``), with ``max_items`` a bound on the whole run: a pass that failed after
    claiming some rows leaves the retry only what is left (the rows it claimed were processed,
    or are held by their leases until these expire, like any claimed row). The counts are those
    of every attempt together."""
    validate_pass_arguments(max_items, options.get("batch", DEFAULT_MAX_BATCH),
                            options.get("lease_owner"), options.get("lease_seconds"))
    spent: Counter = Counter()

    @instrumented_pass("work")
    def attempt() -> WorkPassCounts:
        tally: Counter = Counter()
        try:
            left = max_items - spent["claimed"]
            if left > 0:
                _run_pass(tally, max_items=left, **options)
        except BaseException as exc:
            committed.note(exc, _counts(tally).as_dict())  # this attempt's, for the metrics
            raise
        finally:
            # Counted even when the attempt raised: what it claimed is spent.
            spent.update(tally)
        return _counts(tally)

    try:
        run_with_retry("work.pass", attempt)
    except BaseException as exc:
        committed.note(exc, _counts(spent).as_dict())  # every attempt's, for the command
        raise
    return _counts(spent)


def _counts(tally: Counter) -> WorkPassCounts:
    return WorkPassCounts(**{k: tally[k] for k in WorkPassCounts.__dataclass_fields__})


def _run_pass(tally: Counter, *, max_items: int = 100, lease_owner: str | None = None,
              lease_seconds: float | None = None, batch: int = DEFAULT_MAX_BATCH,
              heartbeat: bool = True, stop=None, using: str | None = None,
              concurrency: int = 1, queues: Iterable[str] | None = None,
              wait_budget: float = WAIT_BUDGET_SECONDS) -> None:
    """The pass itself, counting into ``tally`` as it goes (validated before any row moves)."""
    owner, seconds = validate_pass_arguments(max_items, batch, lease_owner, lease_seconds)
    validate_concurrency(concurrency)
    budget = validate_wait_budget(wait_budget)
    validate_stop(stop)
    opts = Options(owner, validate_heartbeat(heartbeat),
                   validate_using(conf.database_alias() if using is None or using == ""
                                  else using),  # 0 and False are no alias
                   None if queues is None else validate_queues(queues))
    refuse_inside_transaction(opts.using)
    sizer = sizer_for(opts.using, opts.queues, budget)
    if concurrency == 1:
        _run_sequential(opts, seconds, max_items, batch, stop, tally, sizer)
    else:
        from durable_schedule.work.concurrency import run_concurrent

        run_concurrent(opts, seconds, max_items, batch, stop, tally, concurrency, sizer)


def refuse_inside_transaction(using: str) -> None:
    """The pass commits its own transactions (permits before invocations, outcomes before the
    next claim): inside the caller's atomic block Django refused with a bare RuntimeError, and
    with autocommit off every commit would have joined the caller's transaction, acknowledged
    only in memory. A test case's own wrapping transaction (Django's TestCase) is allowed, as
    Django's durable blocks allow it."""
    conn = connections[using]
    blocks = conn.atomic_blocks
    if blocks and not all(getattr(b, "_from_testcase", False) for b in blocks):
        raise PassInsideTransaction("process_work_pass was called inside transaction.atomic()",
                                    using=using)
    if not blocks and conn.connection is not None and not conn.get_autocommit():
        raise PassInsideTransaction("process_work_pass was called with autocommit off",
                                    using=using)


def stopping(stop) -> bool:
    return stop is not None and stop()


def _run_sequential(opts: Options, seconds: float, max_items: int, batch: int, stop,
                    tally: Counter, sizer: ClaimSizer) -> None:
    processed = 0
    while processed < max_items and not stopping(stop):
        n = min(sizer.next_size(batch), max_items - processed)
        admission = admit_batch(opts, seconds, n)
        if admission.tally.pop("batch_conflicts", 0):
            processed += per_item_round(opts, seconds, n, stop, tally)
            continue
        tally.update(admission.tally)
        tally["claimed"] += len(admission.claims)
        if not admission.claims:
            break
        results = []
        admitted = admission.admitted
        invoking = False  # the attempt at len(results) was handed to invoke()
        # The watches of the finished attempts: their leases stay renewed until the group
        # commit starts, so a slow attempt after them cannot let them lapse (and be taken over
        # and run again by another worker) while their outcomes wait in memory.
        held: list[int] = []
        try:
            for action, origin in admitted:
                invoking = False
                if stopping(stop):
                    results.append((action, AttemptOutcome("handed_back")))
                    continue
                barrier(WORK_PERMIT_AFTER_COMMIT)
                # invoke() checks the attempt's local cancel point first: one that waited here
                # past its lease end or deadline is not started (not_invoked), as in
                # concurrency.py.
                started = clock.monotonic()
                invoking = True
                outcome = invoke(action, opts, origin, held)
                record_duration(sizer, action, outcome, clock.monotonic() - started)
                barrier(WORK_EFFECT_BEFORE_OUTCOME)
                results.append((action, outcome))
        except BaseException:
            # KeyboardInterrupt / SystemExit (raised by the executor, or Ctrl-C): the worker
            # stops and the interrupted attempt records nothing (recovered after its lease, as
            # a crash). The attempts of this batch that finished keep their outcomes and the
            # ones not started are handed back, committed before the interrupt leaves the pass.
            # An interrupt before the attempt reached invoke() (in the stop check, say) left
            # it unstarted: handed back with the rest, not left to lapse as a crash.
            interrupted_at = len(results) + (1 if invoking else 0)
            results.extend((a, AttemptOutcome("handed_back"))
                           for a, _ in admitted[interrupted_at:])
            unwatch_all(held)
            halt_batch(results, admission.deferred, opts, tally)
            raise
        # Stopped (and joined) before the commit: a renewal holding a row's lock while the
        # group commit locks it would make the commit pass that row by.
        unwatch_all(held)
        commit_outcomes(results, opts, tally)
        run_deferred(admission.deferred, opts, stop, tally)
        processed += len(admission.claims)


def halt_batch(results, deferred, opts: Options, tally: Counter) -> None:
    """A pass leaving on an interrupt: commit what its batch reported, release the claims it
    will not process. Tried once; what cannot be committed is recovered after its lease."""
    try:
        commit_outcomes(results, opts, tally)
        tally["released"] += release(list(deferred), opts)
    except Exception:  # noqa: BLE001 -- the interrupt is the one to report
        pass


def record_duration(sizer: ClaimSizer, action, outcome: AttemptOutcome, seconds: float) -> None:
    """Feed one invocation's duration to the sizer; an attempt that was not started says
    nothing about how long executors take."""
    if outcome.kind not in ("not_invoked", "handed_back"):
        row = action.row
        sizer.record(seconds, local_window(row.now, row.lease_expires_at,
                                           row.execution_deadline))


def per_item_round(opts: Options, seconds: float, n: int, stop, tally: Counter) -> int:
    """The per-item path for one claim's worth of rows (after a batch conflicted)."""
    claims = _claim(opts, seconds, n)
    tally["claimed"] += len(claims)
    run_deferred(claims, opts, stop, tally)
    return max(len(claims), 1)  # an empty claim still counts, so the pass ends


def run_deferred(claims, opts: Options, stop, tally: Counter) -> None:
    for i, claim in enumerate(claims):
        if stopping(stop):
            tally["released"] += release(claims[i:], opts)
            return
        try:
            process_one(claim, opts, tally, stop)
        except Exception:
            raise  # a database error: the pass retry takes over, the claims lapse
        except BaseException:
            # KeyboardInterrupt / SystemExit from this item's executor or reconciler: the
            # worker stops, and the claims after it are released, as halt_batch releases a
            # batch's (tried once; what cannot be released lapses with its claim lease).
            try:
                tally["released"] += release(claims[i + 1:], opts)
            except Exception:  # noqa: BLE001 -- the interrupt is the one to report
                pass
            raise


def commit_outcomes(results, opts: Options, tally: Counter) -> None:
    """Group-commit; if a guarded statement conflicts (a tampered store), the batch rolled back
    and each outcome is recorded alone, so the conflicting one is isolated. A transient error
    retries the group commit itself (the items still hold their leases), never the executors.
    An ``abandoned`` outcome records nothing (its lease expires, as a crashed worker's)."""
    kept = [(action, outcome) for action, outcome in results if outcome.kind != "abandoned"]
    if len(kept) != len(results):
        tally["abandoned"] += len(results) - len(kept)
        results = kept
    if not results:
        return
    recorded = results
    try:
        tally.update(run_with_retry("work.outcome", lambda: record_outcomes(results, opts),
                                    identity={"items": len(results)}))
    except LeaseConflict:
        recorded = []
        for action, outcome in results:
            try:
                tally.update(record_attempt_outcome(action, outcome, opts.owner, opts.using))
            except LeaseConflict:
                tally["lost"] += 1
            else:
                recorded.append((action, outcome))
    # After the commit: what an executor asked to run once its outcome is recorded (the tasks
    # backend's task_finished) sees what the store decided. An outcome the store refused (its
    # row moved on) was never recorded, so its follow-ups never run (WorkContext.after_outcome).
    run_followups(outcome for _action, outcome in recorded)
