"""Overlap policies: what an instant does while the schedule's previous Work still runs
(docs/schedules.md "Overlap policies"; Temporal's ``ScheduleOverlapPolicy`` is the reference).
Pure: no database, no clock.

* ``queue_one`` (default; Temporal ``BUFFER_ONE``): at most one occurrence waits behind the
  running Work; instants arriving meanwhile join it (coalesce) instead of queueing more.
* ``skip`` (Temporal ``SKIP``): an instant whose slot is held is recorded as a skipped
  occurrence and counted (``missed.overlap_skip``); nothing runs for it later.
* ``buffer_all`` (Temporal ``BUFFER_ALL``): an instant whose slot is held -- or that arrives
  while older instants still wait -- is buffered: its own pending occurrence (its own identity,
  so its Work id is the one it would have had running at once), run one after another, oldest
  first, each when the previous Work ends. The buffer is bounded per generation
  (``buffer_limit``, default 100, at most 1000): an instant arriving at a full buffer is
  recorded as a skipped occurrence and counted (``missed.buffer_overflow``).
* ``allow_all`` (Temporal ``ALLOW_ALL``): no slot; every instant runs at once, beside any
  running Work.
"""

from __future__ import annotations

OVERLAP_POLICIES = ("queue_one", "skip", "buffer_all", "allow_all")
WORK_ACTIONS = ("nominal", "recovery")
#: buffer_all's bound per generation: the default, and the largest a generation may have.
DEFAULT_BUFFER_LIMIT = 100
MAX_BUFFER_LIMIT = 1000


def apply(action: str, overlap: str, *, occupied: bool, pending: bool, buffered: int = 0,
          buffer_limit: int | None = None) -> tuple[str, str | None]:
    """The action after the overlap policy, and the skip cause when it turns into a skip.

    ``action``: what the instants would do with a free slot (``nominal``, ``recovery`` or a
    misfire ``skipped``). ``occupied``: a nonterminal Work of the schedule holds the slot;
    ``pending``: a pending coalesced occurrence exists (only ``queue_one`` makes those);
    ``buffered``: buffered occurrences waiting (only ``buffer_all`` makes those), at most
    ``buffer_limit``.
    """
    if pending:
        # A pending coalesced occurrence absorbs every new instant, a skipped range included:
        # its last instant only moves forward, so anything recorded beside it would later fall
        # inside its range (evaluation/decision.py rule 4).
        return "coalesce", None
    if action not in WORK_ACTIONS:
        return action, ("misfire" if action == "skipped" else None)
    if overlap == "allow_all":
        return action, None
    if overlap == "skip":
        return ("skipped", "overlap") if occupied else (action, None)
    if overlap == "buffer_all":
        # Behind older buffered instants even when the slot is free: they run first, in order.
        if not occupied and buffered == 0:
            return action, None
        # With the slot free the oldest buffered occurrence runs in this same pass, so one
        # place frees before this instant joins the buffer.
        waiting = buffered if occupied else buffered - 1
        if buffer_limit is not None and waiting >= buffer_limit:
            return "skipped", "buffer_overflow"
        return "buffer", None
    # queue_one: keep order and "at most one queued" (see evaluation/decision.py rule 4).
    if occupied:
        return "coalesce", None
    return action, None


def trigger_allowed(overlap: str, *, occupied: bool, buffered: int = 0,
                    coalesced: int = 0) -> bool:
    """Whether a manual run (``trigger``) may start now: the slot is free and nothing queued
    waits to run first (``buffer_all``: no buffered instant; ``queue_one``: no pending
    coalesced occurrence, which keeps its place in the order), or there is no slot."""
    return overlap == "allow_all" or not (occupied or buffered or coalesced)
