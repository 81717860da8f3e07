"""What an executor's exception leaves behind: a log record and a bounded error value (issue 12
item 5, issue 15 item 3).

Every failed attempt is logged once on ``durable_schedule.work`` at ERROR with its traceback and
the ids an operator searches for (scope, work id, attempt, permit, Work name and version, lease
owner) as ``extra`` fields, so a JSON log formatter can index them. The stored error value (in
``last_error`` and in the history row of the failure, so *every* failed attempt keeps its own)
carries the exception's class path (``module.QualName``, what Django's ``TaskResult.errors``
names) and its formatted traceback, bounded to :data:`TRACEBACK_LIMIT` characters: an
executor that raises a megabyte-long message or recurses a thousand frames deep must not bloat
the Work row or the append-only history. When cut, the head (where the chain starts) and the
tail (where it was raised, usually the interesting end) are kept with a marker between them.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

log = logging.getLogger("durable_schedule.work")

#: Characters of formatted traceback kept per failed attempt.
TRACEBACK_LIMIT = 8000
#: Characters of exception message kept.
MESSAGE_LIMIT = 2000
_HEAD = TRACEBACK_LIMIT // 4


def class_path(exc: BaseException) -> str:
    """``module.QualName`` of the exception's class (``builtins.ValueError`` for builtins)."""
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}"


def bounded_traceback(exc: BaseException, limit: int = TRACEBACK_LIMIT) -> str:
    """The formatted traceback (with its cause/context chain), at most ``limit`` characters."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) <= limit:
        return text
    head = min(_HEAD, limit // 4)
    marker = f"\n... {len(text) - limit} characters cut ...\n"
    tail = max(0, limit - head - len(marker))
    return text[:head] + marker + text[len(text) - tail:]


def exception_facts(exc: BaseException) -> dict[str, Any]:
    """The stored part of an exception: type name, class path, bounded traceback."""
    return {"type": type(exc).__name__, "class": class_path(exc),
            "traceback": bounded_traceback(exc)}


def log_failure(what: str, ctx, exc: BaseException) -> None:
    """Log an executor's (``what="executor"``) or reconciler's exception with its traceback and
    ids; ``ctx`` is the attempt's :class:`~durable_schedule.work.executor.WorkContext`."""
    ids = {"scope": ctx.scope, "work_id": str(ctx.work_id), "attempt": ctx.attempt,
           "permit_no": ctx.permit_no, "work_name": ctx.work_name,
           "work_version": ctx.work_version, "lease_owner": ctx.lease_owner}
    log.error("%s of %s %s raised %s: scope=%s work_id=%s attempt=%d permit=%d", what,
              ctx.work_name, ctx.work_version, class_path(exc), ctx.scope, ctx.work_id,
              ctx.attempt, ctx.permit_no, exc_info=(type(exc), exc, exc.__traceback__),
              extra={"durable": ids})
