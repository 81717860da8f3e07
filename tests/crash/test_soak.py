"""The randomized crash soak: four processes over many schedules and their Work, killed at
random barriers, SIGKILLed and cut off from the database at random moments; after recovery with
no barrier armed, every due instant is covered exactly once, no Work is lost and none is
duplicated (docs/reliability.md "Soak").

CI runs the small plan (200 schedules, a few waves, well under a minute). The long plan
(2,000 schedules) is for manual runs: ``--soak-long`` or ``DURABLE_SOAK_LONG=1``. The seed:
``--soak-seed N`` or ``DURABLE_SOAK_SEED=N``. ``DURABLE_SOAK_RECORD=1`` writes the figures to
``tests/crash/last_soak.json`` (a path instead of ``1`` writes there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.crash import soak

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]

RECORD = Path(__file__).resolve().parent / "last_soak.json"


def _record(figures: soak.Figures) -> None:
    where = os.environ.get("DURABLE_SOAK_RECORD", "").strip()
    if not where or where.lower() in ("0", "false", "no", "off"):
        return
    path = RECORD if where.lower() in ("1", "true", "yes", "on") else Path(where)
    data = figures.as_json()
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def test_soak__random_kills_and_disconnects_leave_every_instant_covered_once(
        committed_clock, invoice, touch, soak_seed, soak_long):
    size = soak.LONG if soak_long else soak.CI
    figures, report = soak.run_soak(committed_clock, soak_seed, size, "long" if soak_long else "ci",
                            {"invoice": invoice, "touch": touch})
    _record(figures)
    summary = json.dumps(figures.as_json(), indent=1, sort_keys=True, default=str)
    print(summary)  # shown with -s, and with the failure report
    assert not figures.unexpected, summary
    report.assert_clean()
    inv = figures.invariants
    assert inv["duplicate_occurrences"] == inv["duplicate_works"] == 0
    assert inv["duplicate_effects"] == 0
    # The soak did what it claims: processes died at barriers and by SIGKILL, connections were
    # terminated, and the subprocesses (not only the final recovery) did the bulk of the work.
    assert figures.waves_run >= 1
    assert sum(figures.killed_at_barrier.values()) >= 1, summary
    assert figures.backends_terminated + figures.sigkilled >= 1, summary
    assert figures.works_before_recovery > 0, summary
