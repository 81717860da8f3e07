"""Named crash barriers (docs/protocol/schedules.md rule S9, "Deferred
crash-proof criteria").

A barrier is a named point in the code at which a test can make the process die for real
(``os._exit``: no ``finally``, no rollback message, no atexit) to prove that recovery yields one
occurrence and one accepted Work. Arm one with the environment variable
``DURABLE_SCHEDULE_CRASH_AT=<name>[,<name>...]`` (read once, at import). Unarmed, a barrier costs
one frozenset membership test.

The same named points can *stall* instead of die: ``DURABLE_SCHEDULE_STALL_AT=<name>=<seconds>
[,...]`` makes the real process sleep there (a GC pause, a stopped process, a slow host), so a
test can prove that a worker starved between admission and invocation does not invoke after its
lease ended (docs/work.md "The local lease budget").
"""

from __future__ import annotations

import math
import os
import sys
import time

SCHEDULE_DECISION_BEFORE_COMMIT = "schedule-decision-before-commit"
SCHEDULE_DECISION_AFTER_COMMIT = "schedule-decision-after-commit"
SCHEDULE_BRIDGE_BEFORE_COMMIT = "schedule-bridge-before-commit"
SCHEDULE_LINK_AFTER_COMMIT = "schedule-link-after-commit"
SCHEDULE_WORK_AFTER_ACCEPTANCE = "schedule-work-after-acceptance"
WORK_PERMIT_AFTER_COMMIT = "work-permit-after-commit"
WORK_EFFECT_BEFORE_OUTCOME = "work-effect-before-outcome"

ALL = frozenset({
    SCHEDULE_DECISION_BEFORE_COMMIT,
    SCHEDULE_DECISION_AFTER_COMMIT,
    SCHEDULE_BRIDGE_BEFORE_COMMIT,
    SCHEDULE_LINK_AFTER_COMMIT,
    SCHEDULE_WORK_AFTER_ACCEPTANCE,
    WORK_PERMIT_AFTER_COMMIT,
    WORK_EFFECT_BEFORE_OUTCOME,
})

#: Exit status of a process killed at a barrier, so a test can tell it from other failures.
CRASH_EXIT_CODE = 86


def _armed_from_environment() -> frozenset[str]:
    raw = os.environ.get("DURABLE_SCHEDULE_CRASH_AT", "")
    names = frozenset(n.strip() for n in raw.split(",") if n.strip())
    unknown = names - ALL
    if unknown:
        raise RuntimeError(f"DURABLE_SCHEDULE_CRASH_AT names unknown barriers: {sorted(unknown)}")
    return names


def _stalls_from_environment() -> dict[str, float]:
    stalls: dict[str, float] = {}
    for item in os.environ.get("DURABLE_SCHEDULE_STALL_AT", "").split(","):
        if not item.strip():
            continue
        name, _, seconds = item.strip().partition("=")
        if name not in ALL:
            raise RuntimeError(f"DURABLE_SCHEDULE_STALL_AT names an unknown barrier: {name!r}")
        try:
            stall = float(seconds)
        except ValueError:
            raise RuntimeError(
                f"DURABLE_SCHEDULE_STALL_AT: {item!r} is not <name>=<seconds>") from None
        if not math.isfinite(stall) or stall < 0:
            # time.sleep refuses a negative or NaN length at the barrier, inside the pass's
            # transaction, and never returns from an infinite one: refused here instead.
            raise RuntimeError(f"DURABLE_SCHEDULE_STALL_AT: {item!r}: the seconds must be a "
                               "finite number, zero or more")
        stalls[name] = stall
    return stalls


_ARMED = _armed_from_environment()
_STALLS = _stalls_from_environment()
_ACTIVE = _ARMED | frozenset(_STALLS)


def barrier(name: str) -> None:
    """Die here, at once, if this barrier is armed; sleep here if it is stalled."""
    if name not in _ACTIVE:
        return
    if name in _STALLS:
        sys.stderr.write(f"durable_schedule: stall barrier {name} reached, sleeping\n")
        time.sleep(_STALLS[name])
    if name in _ARMED:
        sys.stderr.write(f"durable_schedule: crash barrier {name} reached, exiting\n")
        sys.stderr.flush()
        os._exit(CRASH_EXIT_CODE)
