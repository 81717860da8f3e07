"""Management commands: a bad option is a DS-coded error that changes nothing, even when it
comes after a good one on the same command line (docs/operations.md "Recovery after a
restore", "Re-provisioning a scope"). ``durable_recover`` acts flag by flag, so an input
checked only when its own step runs lets the earlier steps commit first."""

from __future__ import annotations

from io import StringIO

import pytest
from demo import schedule_targets
from django.core.management import CommandError, call_command

from durable_schedule import schedules
from durable_schedule.operations.provisioning import reprovision_scope
from durable_schedule.operations.recovery import bump_runtime_epoch
from tests.schedules.conftest import HOUR

pytestmark = pytest.mark.django_db
A = "tenant-a"


@pytest.fixture
def target():
    return schedule_targets.report.target(payload={"report": "nightly"})


def _epoch() -> int:
    return bump_runtime_epoch(dry_run=True).before


def _generation(scope: str) -> int:
    return reprovision_scope(scope, dry_run=True).generation_before


def test_recover__an_unknown_scope_after_bump_epoch_bumps_nothing(clock, target):
    schedules.create(A, "s", schedules.Every(HOUR), target)
    before = _epoch()
    with pytest.raises(CommandError, match="DS306"):
        call_command("durable_recover", "--bump-epoch", "--reprovision-scope", "nope",
                     stdout=StringIO())
    assert _epoch() == before  # the restore fence of every schedule was not raised


def test_recover__a_bad_scope_in_the_list_reprovisions_no_other_scope(clock, target):
    schedules.create(A, "s", schedules.Every(HOUR), target)
    for bad in ("nope", " "):
        with pytest.raises(CommandError, match="DS3"):
            call_command("durable_recover", "--reprovision-scope", A,
                         "--reprovision-scope", bad, stdout=StringIO())
        assert _generation(A) == 1


def test_recover__a_bad_actor_is_refused_before_anything_moves(clock, target):
    schedules.create(A, "s", schedules.Every(HOUR), target)
    before = _epoch()
    with pytest.raises(CommandError, match="DS406"):
        call_command("durable_recover", "--bump-epoch", "--release-all", "--actor", "x" * 201,
                     stdout=StringIO())
    assert _epoch() == before
    with pytest.raises(CommandError, match="DS406"):
        call_command("durable_recover", "--reprovision-scope", A, "--release-all",
                     "--actor", "bad\nactor", stdout=StringIO())
    assert _generation(A) == 1


def test_partitions__dry_run_lists_the_months_and_creates_none(clock):
    clock.set(clock.now.replace(year=2034, month=5))
    out = StringIO()
    call_command("durable_partitions", "--dry-run", stdout=out)
    assert out.getvalue().split("\n")[:2] == ["would create durable_schedule_history_203405",
                                              "would create durable_schedule_history_203406"]
    out = StringIO()
    call_command("durable_partitions", stdout=out)  # the dry run created nothing
    assert "created durable_schedule_history_203405" in out.getvalue()


@pytest.mark.parametrize("age", ["999999999999d", "99999999999999999999w", "3000000d"])
def test_prune__an_age_past_year_one_is_ds427_not_overflow(clock, age):
    with pytest.raises(CommandError, match="DS427"):
        call_command("durable_prune", "--older-than", age, "--dry-run", stdout=StringIO())
    out = StringIO()
    call_command("durable_prune", "--older-than", "365000d", "--dry-run", stdout=out)
    assert out.getvalue().startswith("would remove")
