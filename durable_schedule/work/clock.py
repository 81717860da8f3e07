"""The Work runtime's local monotonic clock: one seam (issue 16; docs/work.md "Batched Work").

Everything the worker measures on its own clock reads :func:`monotonic`: the budget origin
taken before an admission statement, the local cancel point an attempt is checked against
right before it starts (:class:`.executor.WorkContext`), and the invocation durations the claim
size is estimated from (:mod:`.sizing`). In production it is :func:`time.monotonic`; a test
installs a controlled source with :func:`controlled`, so it can make an executor "take" a
minute without sleeping. Decisions stay the database clock's (docs/protocol/work.md): this
clock only ever *withholds* an invocation or shrinks a claim, never grants anything.

The watchdog threads keep :func:`time.monotonic` for their waits: they sleep real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_source: Callable[[], float] = time.monotonic


def monotonic() -> float:
    """Seconds on the runtime's monotonic clock (an arbitrary origin, never going back)."""
    return _source()


@contextmanager
def controlled(source: Callable[[], float]) -> Iterator[None]:
    """Read ``source`` instead of :func:`time.monotonic` inside the block (tests)."""
    global _source
    previous, _source = _source, source
    try:
        yield
    finally:
        _source = previous
