"""Logging for production (docs/operations.md "Logging").

:class:`JsonFormatter` writes one JSON object per line: time (UTC, ISO 8601), level, logger,
message, the exception with its traceback when there is one, and every ``extra`` field the
runtime attaches (``scope_id``, ``work_id``, ``attempt``, ``schedule_id``, ``runner``,
``counts``, ``phase``, ``sqlstate``, ...). It is optional: point a handler's formatter at it in
``LOGGING``.

The stop summary of a ``--loop`` runner is one line, written once: through the
``durable_schedule.runner`` logger when some handler takes it, otherwise on the command's
stdout (Django configures no handler for our loggers by default, so without this rule the line
was either lost or, with logging configured, printed twice).
"""

from __future__ import annotations

import json
import logging
import math
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("durable_schedule.runner")

#: LogRecord attributes that are not ``extra`` fields.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines inside values are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                # An extra named like a field of the line ("time", "level", ...) must not
                # replace it: a reader filtering on level would miss the record.
                data[f"extra_{key}" if key in data else key] = value
        if record.exc_info:
            data["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            data["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            data["exc"] = record.exc_text
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return one_line_json(data)


#: Characters JSON leaves unescaped that line readers split on (``str.splitlines``, JavaScript).
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def one_line_json(data: dict[str, Any]) -> str:
    """``data`` as one line of strict JSON, whatever the extras hold: NaN or infinity (``NaN``
    is not JSON), dict keys JSON cannot take (a tuple), a circular structure, and the line
    breaks JSON does not escape (U+0085, U+2028, U+2029) are written as text."""
    try:
        text = json.dumps(data, default=str, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(_plain(data, depth=0), ensure_ascii=False, allow_nan=False)
    for char, escaped in _LINE_BREAKS.items():
        text = text.replace(char, escaped)  # only ever inside a JSON string
    return text


def _plain(value: Any, *, depth: int) -> Any:
    """``value`` with what strict JSON cannot hold as text (see :func:`one_line_json`)."""
    if depth > 20:
        return repr(value)[:200]  # deep or circular: a bounded trace, not a recursion error
    if isinstance(value, dict):
        return {str(k): _plain(v, depth=depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth=depth + 1) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)


def stop_summary(queue: str, stats: Any, *, failed: bool = False) -> str:
    """``work runner stopped after 12 passes (3 busy): claimed=4 succeeded=4`` (zero counts
    left out); ``failed``: ``work runner failed after ...`` (an error ended it; the counts are
    still what committed, the failed pass's included)."""
    totals = " ".join(f"{k}={v}" for k, v in sorted(stats.totals.items()) if v) or "nothing done"
    ended = "failed" if failed else "stopped"
    return (f"{queue} runner {ended} after {stats.passes} passes ({stats.busy_passes} busy): "
            f"{totals}")


def reaches_a_handler(logger: logging.Logger, level: int = logging.INFO) -> bool:
    """True when a record of ``level`` on ``logger`` is written by some handler (Python's
    last-resort handler does not count: it prints WARNING and above only)."""
    if not logger.isEnabledFor(level):
        return False
    current: logging.Logger | None = logger
    while current is not None:
        if any(h.level <= level for h in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def log_stop_summary(queue: str, stats: Any, *, failed: bool = False) -> str:
    """Log the summary (written if a handler takes it) and return the line."""
    line = stop_summary(queue, stats, failed=failed)
    log.info(line, extra={"runner": queue, "counts": dict(stats.totals),
                          "passes": stats.passes})
    return line


def print_stop_summary(stdout, queue: str, stats: Any, verbosity: int, *,
                       failed: bool = False) -> None:
    """The command's side: print the summary unless logging already wrote it."""
    if verbosity >= 1 and not reaches_a_handler(log):
        stdout.write(stop_summary(queue, stats, failed=failed))
