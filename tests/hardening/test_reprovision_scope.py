"""The operator call to re-provision a scope (bump its generation): docs/operations.md
"Re-provisioning a scope". The scope's schedules then suspend on the scope-generation fence
before their cursor moves or Work exists; other scopes are untouched; schedules.update() is the
repair, release_after_recovery refuses it."""

from __future__ import annotations

from io import StringIO

import pytest
from demo import schedule_targets
from django.core.management import CommandError, call_command

from durable_schedule import schedules
from durable_schedule.errors import ReleaseRefused, ScopeNotFound
from durable_schedule.operations.provisioning import reprovision_scope
from tests.conftest import T0
from tests.schedules.conftest import HOUR, MINUTE, SECOND, definition, run_pass, works

pytestmark = pytest.mark.django_db
A, B = "tenant-a", "tenant-b"


@pytest.fixture
def target():
    return schedule_targets.report.target(payload={"report": "nightly"})


def test_reprovision__fences_the_scopes_schedules_and_update_repairs_them(clock, target):
    for scope in (A, B):
        schedules.create(scope, "s", schedules.Every(HOUR), target)
    schedules.create(A, "t", schedules.Every(HOUR), target)

    dry = reprovision_scope(A, dry_run=True)
    assert (dry.generation_before, dry.generation_after, dry.fenced_schedules) == (1, 2, ("s", "t"))
    assert schedules.get(A, "s").scope_generation == 1  # the dry run changed nothing
    done = reprovision_scope(A, dry_run=False)
    assert (done.generation_before, done.generation_after, done.dry_run) == (1, 2, False)

    counts = run_pass(clock, T0 + HOUR + SECOND)
    assert (counts.suspended, counts.materialized) == (2, 1)  # A's two fenced, B's one ran
    for sid in ("s", "t"):
        d = definition(sid, scope=A)
        assert (d["state"], d["suspension_reason"], d["cursor_utc"]) == (
            "suspended", "scope_generation_mismatch", T0)
        assert d["suspension_evidence"]["scope_generation"] == 2
    assert works(A) == [] and len(works(B)) == 1
    assert schedules.get(B, "s").state == "active"

    with pytest.raises(ReleaseRefused):
        schedules.release_after_recovery(A, "s", actor="ops")
    clock.set(T0 + HOUR + 5 * MINUTE)
    info = schedules.update(A, "s", expected_revision=schedules.get(A, "s").revision,
                            actor="ops:alice")
    assert (info.state, info.scope_generation) == ("active", 2)
    assert run_pass(clock, T0 + 3 * HOUR).materialized >= 1
    assert len(works(A)) >= 1
    assert schedules.get(A, "t").state == "suspended"  # not repaired: still fenced


def test_reprovision__an_unknown_scope_is_refused_and_not_created(clock):
    with pytest.raises(ScopeNotFound) as caught:
        reprovision_scope("never-written", dry_run=False)
    assert caught.value.code == "DS306"
    assert schedules.list("never-written") == []


def test_durable_recover__reprovision_scope_flag(clock, target):
    schedules.create(A, "s", schedules.Every(HOUR), target)
    out = StringIO()
    call_command("durable_recover", "--reprovision-scope", A, "--dry-run", stdout=out)
    assert out.getvalue().strip() == (
        f"dry run: scope {A} generation 1 -> 2; schedules that suspend on their next pass: s")
    assert schedules.get(A, "s").scope_generation == 1
    out = StringIO()
    call_command("durable_recover", "--reprovision-scope", A, stdout=out)
    assert "generation 1 -> 2" in out.getvalue()
    assert run_pass(clock, T0 + HOUR + SECOND).suspended == 1
    with pytest.raises(CommandError, match="DS306"):
        call_command("durable_recover", "--reprovision-scope", "nope", stdout=StringIO())
