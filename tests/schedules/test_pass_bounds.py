"""Bounds of a one-shot schedule pass (docs/operations.md "Running the processor"):
``process_schedules --max-schedules N`` claims at most N schedules per pass, its transient
retries included, and prints the counts of every attempt of the pass together."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError

from durable_schedule import schedules
from durable_schedule.errors import UnevaluableGeneration
from durable_schedule.processor import process_due_once
from durable_schedule.processor import processor as pass_module
from durable_schedule.runner import retry
from tests.schedules.conftest import HOUR, T0, create, rows, works

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    """The retry's pinned backoff is not what these tests are about: no waiting between
    attempts (the attempts and their order are unchanged)."""
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))


def due(target, n: int) -> None:
    for i in range(n):
        create(f"s{i}", schedules.Every(HOUR), target)


def failing_at_call(monkeypatch, module, name: str, at: int, error: Exception) -> list:
    """``module.name`` raises ``error`` at its ``at``-th call (before it runs: nothing of that
    call happens), and otherwise runs the real function."""
    real = getattr(module, name)
    calls: list[int] = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, flaky)
    return calls


def transient() -> OperationalError:
    return OperationalError("server closed the connection unexpectedly")


def command(*args: str) -> list[str]:
    out = StringIO()
    call_command("process_schedules", "--lease-owner", "bounds", *args, stdout=out)
    return out.getvalue().splitlines()


def leased() -> int:
    [(n,)] = rows("select count(*) from durable_schedule_dispatch where lease_owner = 'bounds'")
    return n


def test_command__max_schedules_bounds_the_pass_across_a_transient_retry(
        committed_clock, target, monkeypatch):
    due(target, 5)
    committed_clock.set(T0 + HOUR)
    # --claim-batch 1: one claim per schedule; the second claim of the first attempt fails
    # transiently after one schedule was claimed and bridged. The retry may claim 2 of 3.
    calls = failing_at_call(monkeypatch, pass_module, "claim", 2, transient())
    lines = command("--max-schedules", "3", "--claim-batch", "1")
    assert len(calls) >= 4  # the failed claim happened, and the retry claimed again
    assert len(works()) == 3
    assert lines == ["pass 1: claimed=3 materialized=3 coalesced=0 recovered=0 skipped=0"
                     " superseded=0 suspended=0 noop=0 held=0"]


def test_command__the_printed_counts_are_those_of_every_attempt(
        committed_clock, target, monkeypatch):
    due(target, 2)
    committed_clock.set(T0 + HOUR)
    failing_at_call(monkeypatch, pass_module, "claim", 2, transient())
    lines = command("--max-schedules", "5", "--claim-batch", "1", "--passes", "2")
    assert len(works()) == 2
    assert lines[0].startswith("pass 1: claimed=2 materialized=2 "), lines
    assert lines[1].startswith("pass 2: claimed=0 materialized=0 "), lines
    assert lines[2].startswith("total: claimed=2 materialized=2 "), lines


def test_process_due_once__an_attempt_failing_mid_claim_keeps_its_committed_outcomes(
        committed_clock, target, monkeypatch):
    due(target, 5)
    committed_clock.set(T0 + HOUR)
    # One claim of 3, processed one schedule at a time: the first is bridged, the second
    # cannot be evaluated and its quarantine meets a transient error, which ends the attempt.
    # The third is still leased by the failed attempt; the retry has nothing left to claim.
    failing_at_call(monkeypatch, pass_module, "_process_claim_with_retry", 2,
                    UnevaluableGeneration("the stored spec cannot be evaluated"))
    failing_at_call(monkeypatch, pass_module, "quarantine_claim", 1, transient())
    counts = process_due_once(3, lease_owner="bounds", batch_size=1)
    assert (counts.claimed, counts.materialized) == (3, 1)
    assert [o.schedule_id for o in counts.outcomes] == ["s0"]
    assert len(works()) == 1
    assert leased() == 2  # held until their leases expire, like any claimed row


def test_process_due_once__refuses_a_bad_argument_before_the_first_attempt(monkeypatch):
    calls = failing_at_call(monkeypatch, pass_module, "claim", 99, transient())
    with pytest.raises(Exception, match="DS404"):
        process_due_once(3, lease_owner=" ")
    assert calls == []
