"""OpenTelemetry spans for a pass and an attempt, when ``opentelemetry-api`` is installed.

No hard dependency: without the package :func:`span` yields ``None`` and costs one branch. With
the API but no SDK configured, OpenTelemetry's own no-op tracer is used, so spans cost little
until the project installs and configures an SDK exporter (docs/operations.md "Tracing").
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


def available() -> bool:
    return _trace is not None


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A current span named ``name`` (exceptions are recorded on it and re-raised)."""
    if _trace is None:
        yield None
        return
    tracer = _trace.get_tracer(TRACER_NAME)
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
