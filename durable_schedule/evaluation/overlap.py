"""Overlap policies: what an instant does while the schedule's previous Work still runs
(docs/schedules.md "Overlap policies"; Temporal's ``ScheduleOverlapPolicy`` is the reference).
Pure: no database, no clock.

* ``queue_one`` (default; Temporal ``BUFFER_ONE``): at most one occurrence waits behind the
  running Work; instants arriving meanwhile join it (coalesce) instead of queueing more.
* ``skip`` (Temporal ``SKIP``): an instant whose slot is held is recorded as a skipped
  occurrence and counted (``missed.overlap_skip``); nothing runs for it later.
* ``allow_all`` (Temporal ``ALLOW_ALL``): no slot; every instant runs at once, beside any
  running Work.

``buffer_all`` is not offered (refused with DS111): see docs/schedules.md for why.
"""

from __future__ import annotations

OVERLAP_POLICIES = ("queue_one", "skip", "allow_all")
WORK_ACTIONS = ("nominal", "recovery")


def apply(action: str, overlap: str, *, occupied: bool, pending: bool) -> tuple[str, str | None]:
    """The action after the overlap policy, and the skip cause when it turns into a skip.

    ``action``: what the instants would do with a free slot (``nominal``, ``recovery`` or a
    misfire ``skipped``). ``occupied``: a nonterminal Work of the schedule holds the slot;
    ``pending``: a pending coalesced occurrence exists (only ``queue_one`` makes those).
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
    # queue_one: keep order and "at most one queued" (see evaluation/decision.py rule 4).
    if occupied:
        return "coalesce", None
    return action, None


def trigger_allowed(overlap: str, *, occupied: bool) -> bool:
    """Whether a manual run (``trigger``) may start now: the slot is free, or there is none."""
    return overlap == "allow_all" or not occupied
