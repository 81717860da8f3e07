"""What a pass committed before it raised (docs/operations.md "Failover and database outages").

A pass counts as it goes: a claim, an admission, a group of outcomes is counted once its
transaction committed. When the pass then raises (a cut connection, a failover, an error of one
item), those counts are still facts: the pass notes them on the exception it raises
(:func:`note`) and whoever retries the pass or ends the run adds them in (:func:`of`): the
``--loop`` runner's pass line, stop summary and heartbeat, the bounded commands' counts. Nothing
is noted for work whose transaction did not commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_ATTRIBUTE = "durable_committed_counts"
_RESULT = "durable_committed_result"


def note(exc: BaseException, counts: Mapping[str, int], result: Any = None) -> None:
    """Record on ``exc`` the counts of what committed before it was raised, and the pass's
    own result object (a PassCounts with its outcomes, for the metrics). An outer layer's
    counts include an inner one's, so the last note wins."""
    try:
        setattr(exc, _ATTRIBUTE, {k: v for k, v in counts.items() if v})
        setattr(exc, _RESULT, result)
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass


def result_of(exc: BaseException) -> Any:
    """The result object noted on ``exc``, else its counts (None when nothing committed)."""
    result = getattr(exc, _RESULT, None)
    return result if result is not None else (of(exc) or None)


def of(exc: BaseException) -> dict[str, int]:
    """The counts noted on ``exc`` (empty when nothing committed or nothing was noted)."""
    return dict(getattr(exc, _ATTRIBUTE, None) or {})


def note_loop(exc: BaseException, stats) -> None:
    """Record on ``exc`` the statistics of the ``--loop`` runner it ended (its stop summary)."""
    note(exc, stats.totals)
    try:
        exc.durable_loop_stats = stats
    except (AttributeError, TypeError):
        pass


def loop_stats_of(exc: BaseException):
    """The statistics :func:`note_loop` recorded, or None."""
    return getattr(exc, "durable_loop_stats", None)
