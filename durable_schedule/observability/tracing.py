"""OpenTelemetry spans for a pass and an attempt, when ``opentelemetry-api`` is installed.

No hard dependency: without the package :func:`span` yields ``None`` and costs one branch. With
the API but no SDK provider configured, every span would be a no-op, so none is started (one
provider check) until the project installs and configures an SDK exporter (docs/operations.md
"Tracing").
Span attributes carry identities only (scope, Work id, attempt, counts), never payloads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

try:  # optional: the tracing extra
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised by the environment without the extra
    _trace = None

TRACER_NAME = "durable_schedule"
#: The providers OpenTelemetry uses until a project configures an SDK one (spans are no-ops).
_NO_SDK = () if _trace is None else (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)


def available() -> bool:
    return _trace is not None


def _tracer() -> Any:
    """The tracer of the configured provider, or None while no SDK provider is set: then every
    span would be OpenTelemetry's non-recording no-op, and skipping it saves the attribute
    building and the context switch per attempt (about 40 us, a tenth of the Work pipeline's
    Python time per item, docs/benchmarks.md). Checked at every span, so a provider configured
    later is used from then on."""
    provider = _trace.get_tracer_provider()
    if isinstance(provider, _NO_SDK):
        return None
    return provider.get_tracer(TRACER_NAME)


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A current span named ``name`` (exceptions are recorded on it and re-raised)."""
    tracer = None if _trace is None else _tracer()
    if tracer is None:
        yield None
        return
    clean = {k: v if isinstance(v, bool | int | float | str) else str(v)
             for k, v in attributes.items() if v is not None}
    with tracer.start_as_current_span(name, attributes=clean) as current:
        yield current


def set_attributes(current: Any, values: dict[str, Any]) -> None:
    if current is None:
        return
    for key, value in values.items():
        if isinstance(value, bool | int | float | str):
            current.set_attribute(key, value)


def traced_attempt(fn: Callable) -> Callable:
    """Decorates the runtime's invoke step ``fn(action, ...)``: one span per attempt, named by
    the Work identity of ``action.row`` (scope, work id, attempt, Work name and version)."""

    @functools.wraps(fn)
    def wrapper(action, *args, **kwargs):
        if _trace is None or isinstance(_trace.get_tracer_provider(), _NO_SDK):
            return fn(action, *args, **kwargs)  # no span would record: skip building one
        row = getattr(action, "row", None)
        with span("durable_schedule.work.attempt",
                  **{"durable.scope_id": getattr(row, "scope_id", None),
                     "durable.work_id": getattr(row, "work_id", None),
                     "durable.attempt": getattr(row, "attempt", None),
                     "durable.work_name": getattr(row, "work_name", None),
                     "durable.work_version": getattr(row, "work_version", None),
                     "durable.permit_no": getattr(action, "permit_no", None)}) as current:
            outcome = fn(action, *args, **kwargs)
            set_attributes(current, {"durable.outcome": getattr(outcome, "kind", None)})
            if current is not None and getattr(outcome, "kind", None) == "failed":
                from opentelemetry.trace import Status, StatusCode

                error = getattr(outcome, "error", None) or {}
                current.set_status(Status(StatusCode.ERROR, str(error.get("type", "failed"))))
            return outcome

    return wrapper
