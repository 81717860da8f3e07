"""Adaptive claim size: ``batch`` is the largest claim, each claim is sized from how long recent
attempts took (issue 16 targets; docs/work.md "Batched Work", docs/operations.md "Sizing
--concurrency, batches and connections").

A batch is admitted in one transaction, so every admitted attempt's lease runs from that
admission, also while it waits for the attempts before it. A big batch divides the fixed cost
of a batch (the claim function, role and scope entry, two commits: docs/benchmarks.md "Batched
Work and acceptance") by more items, but makes the last admitted attempt wait for all the
others. The claim is therefore sized so that an admitted attempt waits, by the current
estimate, at most the *wait budget* before it starts:

* sequential (one slot): ``n = budget / estimate``; with N slots: ``n = N × budget /
  estimate``; clamped to ``[min(N, batch), batch]``;
* the **budget** is ``wait_budget`` (default :data:`WAIT_BUDGET_SECONDS`) and never more than
  :data:`LEASE_FRACTION` of the shortest local window (lease end or deadline, whichever comes
  first, counted from admission) among the attempts last measured -- a policy with a short lease
  or Work near its deadline waits less;
* the **estimate** is the larger of a moving mean of the batches' mean invocation time
  (:data:`EWMA_WEIGHT` for the newest batch) and the slowest invocation of the last measured
  batch: one sudden slow item shrinks the very next claim, the mean keeps it small while slow
  items keep coming, and it decays once they stop;
* **growth** is at most doubling per claim, and the first claim of a process (nothing measured
  yet) is :data:`INITIAL_CLAIM` (or N): a batch of unknown executors is never bigger than what
  the runtime admitted before sizing existed, and fast executors reach the full ``batch`` within
  a few claims.

One sizer per process, per database alias, queue set and wait budget (:func:`sizer_for`): it
outlives the pass, because the ``--loop`` runner and the bench call ``process_work_pass`` again
and again with ``max_items=100``. Durations are read on the runtime's monotonic clock seam
(:mod:`.clock`).

Sizing never changes a guarantee: it only chooses how many rows the next claim asks for. Every
admitted attempt is still checked against its own local cancel point right before it starts
(docs/work.md "The local lease budget"), and one that waited past it is handed back unrun
(``not_invoked``), whatever the estimate said.
"""

from __future__ import annotations

import math
import threading
from datetime import datetime

#: The largest claim by default: ``process_work_pass(batch=...)``, ``process_work --batch`` and
#: the bench's equal batch size (bench/work.py ``BATCH``, pgqueuer's ``batch_size``).
DEFAULT_MAX_BATCH = 100
#: How long an admitted attempt may wait before it starts, by the estimate (seconds).
WAIT_BUDGET_SECONDS = 0.5
#: ``wait_budget`` bounds accepted by :func:`validate_wait_budget` (seconds).
MAX_WAIT_BUDGET_SECONDS = 60.0
#: The budget never exceeds this fraction of the shortest local window of the measured attempts.
LEASE_FRACTION = 0.1
#: The first claim of a sizer (nothing measured yet): the runtime's fixed batch before sizing.
INITIAL_CLAIM = 10
#: Weight of the newest batch's mean in the moving mean.
EWMA_WEIGHT = 0.3


def validate_wait_budget(value: object) -> float:
    """``value`` as a wait budget in seconds; DS246 unless a number in (0, 60]."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value)
            or not 0 < value <= MAX_WAIT_BUDGET_SECONDS):
        from durable_schedule.errors import InvalidWaitBudget

        raise InvalidWaitBudget(
            f"wait budget must be seconds > 0 and <= {MAX_WAIT_BUDGET_SECONDS:g}", got=value)
    return float(value)


def local_window(admitted_at: datetime, lease_expires_at: datetime,
                 deadline: datetime | None) -> float:
    """Seconds from admission to the attempt's local cancel point (lease end or deadline)."""
    end = lease_expires_at if deadline is None else min(lease_expires_at, deadline)
    return max(0.0, (end - admitted_at).total_seconds())


class ClaimSizer:
    """The claim size of one worker process for one alias and queue set. Thread-safe:
    :meth:`record` is called from the executor slots, :meth:`next_size` by the pipeline."""

    def __init__(self, wait_budget: float = WAIT_BUDGET_SECONDS) -> None:
        self.wait_budget = validate_wait_budget(wait_budget)
        self._lock = threading.Lock()
        self._durations: list[float] = []  # recorded since the last claim
        self._windows: list[float] = []
        #: Moving mean of the measured batches' mean invocation time, or None (nothing yet).
        self.mean: float | None = None
        #: The slowest invocation of the last measured batch.
        self.worst = 0.0
        #: The shortest local window among the attempts last measured, or None.
        self.window: float | None = None
        #: The size the last claim asked for (0: none yet).
        self.last_size = 0

    def record(self, seconds: float, window: float | None = None) -> None:
        """One invocation took ``seconds``; ``window`` is its local window from admission."""
        with self._lock:
            self._durations.append(max(0.0, seconds))
            if window is not None:
                self._windows.append(window)

    def budget(self) -> float:
        """How long an admitted attempt may wait, by the estimate."""
        if self.window is None:
            return self.wait_budget
        return min(self.wait_budget, LEASE_FRACTION * self.window)

    def estimate(self) -> float | None:
        """Seconds per invocation the next claim is sized for, or None (nothing measured)."""
        return None if self.mean is None else max(self.mean, self.worst)

    def _fold(self) -> None:
        with self._lock:
            durations, self._durations = self._durations, []
            windows, self._windows = self._windows, []
        if not durations:
            return  # nothing ran since the last claim (refusals, hand-backs): keep the estimate
        batch_mean = sum(durations) / len(durations)
        self.mean = batch_mean if self.mean is None else (
            EWMA_WEIGHT * batch_mean + (1 - EWMA_WEIGHT) * self.mean)
        self.worst = max(durations)
        if windows:
            self.window = min(windows)

    def next_size(self, maximum: int, slots: int = 1) -> int:
        """The size of the next claim: at most ``maximum``, at least ``min(slots, maximum)``."""
        self._fold()
        floor = min(slots, maximum)
        if self.last_size == 0:
            size = max(slots, INITIAL_CLAIM)
        else:
            size = 2 * self.last_size
        estimate = self.estimate()
        if estimate is not None and estimate > 0:
            # compared before int(): a subnormal estimate (durations of 0.0 on a coarse clock
            # decay the mean through them) makes the quotient infinite
            allowed = slots * self.budget() / estimate
            if allowed < size:
                size = int(allowed)
        size = max(floor, min(size, maximum))
        self.last_size = size
        return size


#: Keyed by alias, queue set and wait budget: two passes of one process with different budgets
#: (threads, or a ``--loop`` runner beside an in-process caller) must not overwrite each other's
#: budget, so each budget has its own sizer and its own estimate.
_sizers: dict[tuple[str, tuple[str, ...] | None, float], ClaimSizer] = {}
_sizers_lock = threading.Lock()
#: At most this many sizers per process: a caller passing a new budget on every pass must not
#: grow the table without bound (the oldest sizer is dropped; it only costs a cold estimate).
MAX_SIZERS = 64


def sizer_for(using: str, queues: tuple[str, ...] | None,
              wait_budget: float = WAIT_BUDGET_SECONDS) -> ClaimSizer:
    """This process's sizer for the alias, queue set and wait budget (created on first use)."""
    budget = validate_wait_budget(wait_budget)
    with _sizers_lock:
        sizer = _sizers.get((using, queues, budget))
        if sizer is None:
            if len(_sizers) >= MAX_SIZERS:
                del _sizers[next(iter(_sizers))]  # insertion order: the oldest
            sizer = _sizers[(using, queues, budget)] = ClaimSizer(budget)
        return sizer


def forget() -> None:
    """Drop every sizer of this process (tests: each starts unmeasured)."""
    with _sizers_lock:
        _sizers.clear()
