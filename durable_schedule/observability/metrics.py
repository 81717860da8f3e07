"""Prometheus metrics (optional extra ``metrics``: prometheus-client). docs/operations.md
"Metrics" lists every name.

Two kinds, decided by where the truth lives:

* **Process metrics** (counters, histograms) count what *this* process did: occurrences by kind,
  schedule decisions, Work outcomes, suspensions by reason, quarantines, retries, pass duration
  and claim latency. They live in the runner process (``--loop``), in :data:`REGISTRY`, and a
  runner serves them on ``DURABLE_SCHEDULE["METRICS_PORT"]``. Prometheus sums them across
  runners; a restart resets them, which ``rate()`` handles.
* **Store gauges** (backlog, oldest-due lag, expired leases, live and dead runners, schema) are
  facts of the database, read at scrape time by :class:`StoreCollector` from the payload-free
  dispatch tables and the heartbeat table. Any process can serve them (the Django view,
  ``durable_status --metrics``); they need no scope, so a scrape costs a few index reads
  whatever the number of tenants. Per-scope facts (suspended schedules, Work by state) are not
  scraped: reading them takes a transaction per scope (``durable_status --json`` has them).

Without prometheus-client every ``observe_*`` function still runs (and tracing still works) but
records nothing; :func:`exposition` raises ``MetricsUnavailable`` (DS429).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from durable_schedule.errors import MetricsPortUnavailable, MetricsUnavailable
from durable_schedule.observability import tracing
from durable_schedule.runner import committed

try:  # optional: the metrics extra
    import prometheus_client as _prom
    from prometheus_client.core import GaugeMetricFamily
except ImportError:  # pragma: no cover - exercised by the environment without the extra
    _prom = None

#: Buckets for pass and claim durations: a claim is milliseconds, a Work pass may be minutes.
DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
#: Counts of a Work pass that are not outcomes of a row (they are inputs or bookkeeping).
_NOT_OUTCOMES = frozenset({"claimed"})
#: The schedule processor's quarantine reason (processor/step.py QUARANTINE_REASON).
_QUARANTINE_REASON = "unevaluable"


def available() -> bool:
    return _prom is not None


if _prom is not None:
    REGISTRY = _prom.CollectorRegistry(auto_describe=True)
    PASSES = _prom.Counter("durable_schedule_passes", "Runner passes, by queue and whether the "
                           "pass claimed anything", ["queue", "busy"], registry=REGISTRY)
    PASS_SECONDS = _prom.Histogram("durable_schedule_pass_duration_seconds",
                                   "Wall time of one pass", ["queue"], registry=REGISTRY,
                                   buckets=DURATION_BUCKETS)
    CLAIM_SECONDS = _prom.Histogram("durable_schedule_claim_duration_seconds",
                                    "Latency of one claim statement (lease due rows)", ["queue"],
                                    registry=REGISTRY, buckets=DURATION_BUCKETS)
    CLAIMED = _prom.Counter("durable_schedule_claimed", "Dispatch rows claimed", ["queue"],
                            registry=REGISTRY)
    OCCURRENCES = _prom.Counter("durable_schedule_occurrences",
                                "Occurrences bridged to Work, by occurrence kind", ["kind"],
                                registry=REGISTRY)
    DECISIONS = _prom.Counter("durable_schedule_schedule_decisions",
                              "Schedule pass decisions, by action", ["action"],
                              registry=REGISTRY)
    WORK_OUTCOMES = _prom.Counter("durable_schedule_work_outcomes",
                                  "Work pass results, by outcome (succeeded, retried, failed, "
                                  "expired, suspended, quarantined, reconciled, ...)",
                                  ["outcome"], registry=REGISTRY)
    SUSPENSIONS = _prom.Counter("durable_schedule_suspensions",
                                "Schedules and Work suspended, by queue and reason",
                                ["queue", "reason"], registry=REGISTRY)
    QUARANTINES = _prom.Counter("durable_schedule_quarantines",
                                "Unevaluable schedules and fenced-off Work results kept as "
                                "evidence", ["queue"], registry=REGISTRY)
    RETRIES = _prom.Counter("durable_schedule_work_retries",
                            "Work attempts that failed and were scheduled again",
                            registry=REGISTRY)
else:  # pragma: no cover
    REGISTRY = None


def observe_claim(queue: str, seconds: float, rows: int) -> None:
    if _prom is None:
        return
    CLAIM_SECONDS.labels(queue).observe(seconds)
    CLAIMED.labels(queue).inc(rows)


def observe_pass(queue: str, counts: Any, seconds: float) -> dict[str, int]:
    """Record one pass. ``counts`` is the pass's result (PassCounts or WorkPassCounts, or a
    dict); returns its counts as a dict (for span attributes)."""
    as_dict = counts.as_dict() if hasattr(counts, "as_dict") else dict(counts)
    if _prom is None:
        return as_dict
    PASS_SECONDS.labels(queue).observe(seconds)
    PASSES.labels(queue, str(as_dict.get("claimed", 0) > 0).lower()).inc()
    if queue == "schedule":
        _observe_schedule_outcomes(getattr(counts, "outcomes", ()) or ())
    else:
        _observe_work_counts(as_dict)
    return as_dict


def _observe_schedule_outcomes(outcomes: Iterable[Any]) -> None:
    # Counted first, then one inc() per label: a batched pass reports hundreds of outcomes,
    # and a labels() lookup per outcome was a measurable part of its Python time.
    decisions: Counter[str] = Counter()
    occurrences: Counter[str] = Counter()
    for outcome in outcomes:
        decisions[outcome.action] += 1
        if outcome.work_id is not None and outcome.materialized_kind:
            occurrences[outcome.materialized_kind] += 1
        if outcome.action == "suspend":
            reason = outcome.reason or "unknown"
            SUSPENSIONS.labels("schedule", reason).inc()
            if reason == _QUARANTINE_REASON:
                QUARANTINES.labels("schedule").inc()
    for action, n in decisions.items():
        DECISIONS.labels(action).inc(n)
    for kind, n in occurrences.items():
        OCCURRENCES.labels(kind).inc(n)


def _observe_work_counts(counts: dict[str, int]) -> None:
    for name, value in counts.items():
        if value and name not in _NOT_OUTCOMES:
            WORK_OUTCOMES.labels(name).inc(value)
    if counts.get("suspended"):
        # The pass counts do not carry the Work's reason; durable_status and the admin do.
        SUSPENSIONS.labels("work", "unresolved_attempt").inc(counts["suspended"])
    if counts.get("quarantined"):
        QUARANTINES.labels("work").inc(counts["quarantined"])
    if counts.get("retried"):
        RETRIES.inc(counts["retried"])


def instrumented_pass(queue: str) -> Callable:
    """Decorates a pass function (``process_due``, ``process_work_pass``): a span around the
    pass, its duration and counts into the process metrics. Errors propagate unchanged."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            with tracing.span(f"durable_schedule.{queue}.pass",
                              **{"durable.queue": queue}) as current:
                try:
                    counts = fn(*args, **kwargs)
                except BaseException as exc:
                    # What the pass committed before it raised still happened (committed.py).
                    done = committed.result_of(exc)
                    if done:
                        observe_pass(queue, done, time.perf_counter() - started)
                    raise
                values = observe_pass(queue, counts, time.perf_counter() - started)
                tracing.set_attributes(current, {f"durable.{k}": v for k, v in values.items()})
            return counts

        return wrapper

    return decorate


def timed_claim(queue: str) -> Callable:
    """Decorates a claim function returning the claimed rows: claim latency and rows claimed."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            rows = fn(*args, **kwargs)
            observe_claim(queue, time.perf_counter() - started, len(rows))
            return rows

        return wrapper

    return decorate


class StoreCollector:
    """Gauges read from the database at collection time (see the module docstring)."""

    def __init__(self, using: str | None = None, timeout: float | None = None) -> None:
        self.using = using
        self.timeout = timeout

    def describe(self):
        return []  # read on collect only: never touch the database at registration

    def collect(self):
        from durable_schedule.operations.gauges import read_gauges

        facts = read_gauges(using=self.using, timeout=self.timeout)
        up = GaugeMetricFamily("durable_schedule_store_up",
                               "1 when the store answered, is at a schema this code runs "
                               "against and its roles and grants match the contract, else 0")
        up.add_metric([], 1 if facts.up else 0)
        yield up
        if facts.schema_version is not None:  # also when down: a misfit schema says why
            schema = GaugeMetricFamily("durable_schedule_schema_version",
                                       "Schema version of the store")
            schema.add_metric([], facts.schema_version)
            yield schema
        if not facts.up:
            return
        backlog = GaugeMetricFamily("durable_schedule_backlog",
                                    "Due dispatch rows nobody holds a lease on", labels=["queue"])
        lag = GaugeMetricFamily("durable_schedule_oldest_due_lag_seconds",
                                "How late the oldest unleased due row is (0 when none)",
                                labels=["queue"])
        expired = GaugeMetricFamily("durable_schedule_expired_leases",
                                    "Leases past their expiry (a runner died holding them)",
                                    labels=["queue"])
        for queue, q in facts.queues.items():
            backlog.add_metric([queue], q.due)
            lag.add_metric([queue], q.oldest_lateness_seconds or 0.0)
            expired.add_metric([queue], q.expired_leases)
        yield backlog
        yield lag
        yield expired
        runners = GaugeMetricFamily("durable_schedule_runners",
                                    "Runner processes by kind and heartbeat state",
                                    labels=["kind", "state"])
        for (kind, state), n in sorted(facts.runner_counts.items()):
            runners.add_metric([kind, state], n)
        yield runners


def exposition(*, include_store: bool = True, using: str | None = None,
               timeout: float | None = None) -> tuple[bytes, str]:
    """The text exposition (bytes, content type) of the process metrics and, when asked, the
    store gauges. Raises MetricsUnavailable without prometheus-client."""
    if _prom is None:
        raise MetricsUnavailable("prometheus-client is not installed")
    registry = _prom.CollectorRegistry(auto_describe=False)
    registry.register(_Forward(REGISTRY))
    if include_store:
        registry.register(StoreCollector(using, timeout))
    return _prom.generate_latest(registry), _prom.CONTENT_TYPE_LATEST


class _Forward:
    """Exposes another registry's metrics inside a per-scrape registry."""

    def __init__(self, source) -> None:
        self.source = source

    def collect(self):
        yield from self.source.collect()


def serve_process_metrics(port: int) -> None:
    """Serve this process's counters and histograms on ``port`` (a --loop runner). The store
    gauges are left to the Django view: they are the same whichever process reads them."""
    if _prom is None:
        raise MetricsUnavailable("METRICS_PORT is set but prometheus-client is not installed")
    registry = _prom.CollectorRegistry(auto_describe=False)
    registry.register(_Forward(REGISTRY))
    try:
        _prom.start_http_server(port, registry=registry)
    except OSError as exc:  # taken by another runner on the host, or a privileged port
        raise MetricsPortUnavailable(
            "the runner cannot serve its metrics on DURABLE_SCHEDULE['METRICS_PORT']",
            port=port, error=f"{type(exc).__name__}: {exc}") from exc
