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

The stored text is what ``jsonb`` can hold: an exception whose message carries a NUL character
or an unpaired surrogate (bytes decoded with ``surrogateescape``, a C library's buffer) is kept
with those characters written as backslash escapes, and one whose ``__str__`` or ``__repr__``
raises is described by its class -- otherwise the outcome's own transaction would fail, the
worker pass with it, and the attempt would stay running until its lease ran out, again and
again (docs/work.md "Inspection").
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


def storable_text(text: str) -> str:
    """``text`` with what ``jsonb`` refuses (NUL, unpaired surrogates) as backslash escapes."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def safe_text(value: Any, *, as_repr: bool = False) -> str:
    """``str(value)`` (or ``repr``) as storable text; a method that raises is named instead."""
    try:
        text = repr(value) if as_repr else str(value)
    except Exception as exc:  # noqa: BLE001 -- user code; its failure must not fail the outcome
        how = "repr" if as_repr else "str"
        text = f"<{type(value).__qualname__} whose {how}() raised {type(exc).__qualname__}>"
    return storable_text(text)


def bounded_traceback(exc: BaseException, limit: int = TRACEBACK_LIMIT) -> str:
    """The formatted traceback (with its cause/context chain), at most ``limit`` characters."""
    text = storable_text(
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    if len(text) <= limit:
        return text
    head = min(_HEAD, limit // 4)
    marker = f"\n... {len(text) - limit} characters cut ...\n"
    tail = max(0, limit - head - len(marker))
    return text[:head] + marker + text[len(text) - tail:]


def exception_facts(exc: BaseException) -> dict[str, Any]:
    """The stored part of an exception: type name, class path, bounded traceback."""
    return {"type": storable_text(type(exc).__name__), "class": storable_text(class_path(exc)),
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
