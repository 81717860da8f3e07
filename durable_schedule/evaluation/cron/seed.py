"""The ``H`` seed: deterministic jitter from the schedule identity (docs/schedules.md "H").

The hash is part of the persisted contract (grammar ``cronos-v1``); changing it would move every
``H`` schedule, so it needs a new grammar version:

* ``seed_for(scope, schedule_id)``: the first 8 bytes, big-endian, of
  ``SHA-256(frame(b"durable_schedule.cron.seed.v1") + frame(scope) + frame(schedule_id))``,
  where ``frame(b)`` is ``len(b)`` as 8-byte big-endian followed by ``b`` (strings as UTF-8).
  Two schedules spread; one schedule never moves (the seed is persisted with each generation).
* ``h_draw(seed, field, n)``: ``int.from_bytes(SHA-256(seed as 8 bytes big-endian + b":" +
  field label)[:8], "big") % n`` — one independent value per field, in ``0..n-1``.
"""

from __future__ import annotations

import hashlib

SEED_DOMAIN = b"durable_schedule.cron.seed.v1"
SEED_BITS = 64


def _frame(b: bytes) -> bytes:
    return len(b).to_bytes(8, "big") + b


def seed_for(scope: str, schedule_id: str) -> int:
    """The ``H`` seed of the schedule identity ``(scope, schedule_id)``."""
    digest = hashlib.sha256(
        _frame(SEED_DOMAIN) + _frame(scope.encode("utf-8")) + _frame(schedule_id.encode("utf-8"))
    ).digest()
    return int.from_bytes(digest[:8], "big")


def h_draw(seed: int | None, field, n: int) -> int:
    """A value in ``0..n-1`` for ``H`` in ``field``; ``seed`` None draws as seed 0 (parse-only)."""
    value = 0 if seed is None else seed
    digest = hashlib.sha256(value.to_bytes(8, "big") + b":" + field.label.encode()).digest()
    return int.from_bytes(digest[:8], "big") % n
