"""Queues and priorities of Work (docs/work.md "Queues and priorities").

Every Work has a queue name and a priority (-100..100, Django's range; higher runs first). They
are routing facts of the first acceptance, stored on the Work row and copied onto its dispatch
row, and the claim takes the highest priority first, then the oldest due, through one index.
A worker serves every queue, or the ones ``process_work --queue`` names.
"""

from __future__ import annotations

from collections.abc import Iterable

from durable_schedule import conf
from durable_schedule.errors import InvalidArgument, InvalidQueue
from durable_schedule.work.enqueue import repeated_identifier

DEFAULT_QUEUE = "default"
MIN_PRIORITY, MAX_PRIORITY = -100, 100
#: The claim function's bound on the queues one worker names.
MAX_QUEUES = 100


def validate_queue(name: object) -> str:
    """A queue name (the identifier rule), and one of ``DURABLE_SCHEDULE['QUEUES']`` when that
    setting lists them (DS244 otherwise). The default queue is always allowed: it is every
    request's and every schedule target's queue unless they name another."""
    queue = repeated_identifier(name, "queue")
    allowed = conf.queues()
    if allowed is not None and queue not in allowed and queue != DEFAULT_QUEUE:
        raise InvalidQueue("this queue is not one of DURABLE_SCHEDULE['QUEUES']", queue=queue,
                           allowed=sorted(allowed))
    return queue


def validate_priority(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (
            MIN_PRIORITY <= value <= MAX_PRIORITY):
        raise InvalidArgument(
            f"priority must be a whole number between {MIN_PRIORITY} and {MAX_PRIORITY}",
            got=value)
    return value


def validate_queues(names: Iterable[str]) -> tuple[str, ...]:
    """The queues a worker serves: 1-100 distinct names, in the order given, each one enqueue
    accepts (:func:`validate_queue`: when ``DURABLE_SCHEDULE['QUEUES']`` lists queues, a worker
    naming another one would wait for Work that can never be accepted -- DS244)."""
    if isinstance(names, str):
        names = [names]
    elif not isinstance(names, Iterable):  # a bare number: a DS error, not a TypeError
        raise InvalidArgument("queues must be a queue name or an iterable of them",
                              got=type(names).__name__)
    out: list[str] = []
    for name in names:
        queue = validate_queue(name)
        if queue not in out:
            out.append(queue)
    if not 1 <= len(out) <= MAX_QUEUES:
        raise InvalidArgument(f"a worker serves 1-{MAX_QUEUES} queues", got=len(out))
    return tuple(out)
