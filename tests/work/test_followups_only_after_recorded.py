"""``WorkContext.after_outcome`` callables run only for outcomes the store recorded: when the
group commit conflicts and each outcome is recorded alone, the one whose row moved on (lost)
never runs its follow-ups, the others do (docs/work.md "Batched Work")."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from durable_schedule.work import passes
from durable_schedule.work.outcome import AttemptOutcome
from durable_schedule.work.rows import LeaseConflict


def test_group_commit_conflict__a_lost_outcome_runs_no_followups(monkeypatch):
    ran: list[str] = []
    results = [(SimpleNamespace(name=name),
                AttemptOutcome("succeeded", result_json="null",
                               followups=(lambda name=name: ran.append(name),)))
               for name in ("lost", "kept")]

    def group_commit(results, opts):
        raise LeaseConflict("one row of the group moved on")

    def alone(action, outcome, owner, using):
        if action.name == "lost":
            raise LeaseConflict("moved on")
        return Counter(succeeded=1)

    monkeypatch.setattr(passes, "record_outcomes", group_commit)
    monkeypatch.setattr(passes, "record_attempt_outcome", alone)
    tally: Counter = Counter()
    passes.commit_outcomes(results, SimpleNamespace(owner="w", using="default"), tally)

    assert tally == Counter(lost=1, succeeded=1)
    assert ran == ["kept"]


def test_group_commit__every_recorded_outcome_runs_its_followups(monkeypatch):
    ran: list[str] = []
    results = [(SimpleNamespace(name=name),
                AttemptOutcome("succeeded", result_json="null",
                               followups=(lambda name=name: ran.append(name),)))
               for name in ("a", "b")]
    monkeypatch.setattr(passes, "record_outcomes",
                        lambda results, opts: Counter(succeeded=len(results)))
    tally: Counter = Counter()
    passes.commit_outcomes(results, SimpleNamespace(owner="w", using="default"), tally)

    assert tally == Counter(succeeded=2)
    assert ran == ["a", "b"]
