"""A database error that ends an operator command, as one DS-coded line (DS307) instead of a
traceback (docs/operations.md "Operator commands and database errors").

``durable_prune``, ``durable_partitions``, ``durable_recover`` and ``sync_schedules`` run short
transactions one after another and do not retry: an operator runs them by hand or from cron,
and a lock held by another session or a low ``statement_timeout`` is something to see and
fix, not to wait out. What such a command committed before the error stays committed; the
error says what that was when the command knows it (a prune's batches: the counts noted on the
exception, :mod:`durable_schedule.runner.committed`).
"""

from __future__ import annotations

from django.core.management.base import CommandError

from durable_schedule.errors import CommandStoppedByDatabase
from durable_schedule.runner import committed
from durable_schedule.runner.retry import sqlstate_of


def stopped(command: str, exc: BaseException, *, before: str | None = None) -> CommandError:
    """The CommandError for ``command`` ended by the database error ``exc``. ``before``: what
    committed before it, in words (default: the counts noted on ``exc``, else "nothing")."""
    if before is None:
        done = committed.of(exc)
        before = ", ".join(f"{k}={v}" for k, v in done.items()) if done else "nothing"
    text = " ".join(str(exc).split())  # the server's multi-line message (LINE n, ^) on one line
    error = CommandStoppedByDatabase(
        f"{command} stopped by a database error: {type(exc).__name__}: {text[:500]}",
        sqlstate=sqlstate_of(exc), committed_before=before)
    return CommandError(str(error))
