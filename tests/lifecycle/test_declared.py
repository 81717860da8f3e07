"""Schedules declared in code and ``sync_schedules`` (issue 14 item 9): created when missing, a
new generation only when something changed, removed declarations reported and deleted only with
--prune, one transaction, safe under concurrent deploys."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule import schedules, work
from durable_schedule.errors import DeclarationConflict, InvalidScheduleSpec
from durable_schedule.schedules import declared
from tests.conftest import database_url
from tests.schedules.processes import ROOT, environment

pytestmark = pytest.mark.django_db(transaction=True)
ANCHOR = datetime(2030, 1, 1, tzinfo=UTC)


def touch_target(**payload):
    work.autodiscover()
    return work.lookup("demo.touch", "v1").target(payload=payload)


def decl(schedule_id="nightly", hours=24, scope="tenant-a", **payload) -> declared.Declaration:
    return declared.Declaration(scope=scope, schedule_id=schedule_id,
                                spec=schedules.Every(timedelta(hours=hours), anchor=ANCHOR),
                                target=touch_target(**payload))


def test_sync__creates_what_is_missing_and_a_second_sync_is_a_no_op(committed_clock):
    first = declared.sync(declared=[decl()])
    assert first.created == [("tenant-a", "nightly")]
    info = schedules.get("tenant-a", "nightly")
    assert (info.generation, info.created_by) == (1, declared.SYNC_ACTOR)
    committed_clock.advance(timedelta(minutes=5))
    second = declared.sync(declared=[decl()])
    assert second.unchanged == [("tenant-a", "nightly")] and not second.updated
    again = schedules.get("tenant-a", "nightly")
    assert (again.generation, again.revision) == (1, info.revision)  # no new generation


def test_sync__a_changed_declaration_gets_exactly_one_new_generation(committed_clock):
    declared.sync(declared=[decl()])
    report = declared.sync(declared=[decl(hours=12, kind="changed")])
    assert report.updated == [("tenant-a", "nightly", ["spec", "target"])]
    assert schedules.get("tenant-a", "nightly").generation == 2
    assert declared.sync(declared=[decl(hours=12, kind="changed")]).unchanged


def test_sync__removed_declarations_are_reported_and_deleted_only_with_prune(committed_clock):
    declared.sync(declared=[decl("a"), decl("b")])
    schedules.create("tenant-a", "hand-made", schedules.Every(timedelta(hours=1)),
                     touch_target())  # not created by sync: never touched
    kept = declared.sync(declared=[decl("a")])
    assert kept.removed == [("tenant-a", "b")] and kept.pruned == []
    assert schedules.get("tenant-a", "b").state == "active"
    pruned = declared.sync(declared=[decl("a")], prune=True)
    assert pruned.pruned == [("tenant-a", "b")]
    assert schedules.get("tenant-a", "b").state == "deleted"
    assert schedules.get("tenant-a", "hand-made").state == "active"


def test_sync__finds_removed_declarations_in_scopes_no_declaration_names(committed_clock):
    declared.sync(declared=[decl("x", scope="tenant-gone"), decl("kept")])
    report = declared.sync(declared=[decl("kept")], prune=True)
    assert report.pruned == [("tenant-gone", "x")]
    assert schedules.get("tenant-gone", "x").state == "deleted"


def test_sync__dry_run_reports_and_changes_nothing(committed_clock):
    report = declared.sync(declared=[decl()], dry_run=True)
    assert report.created == [("tenant-a", "nightly")]
    with pytest.raises(Exception, match="DS108"):
        schedules.get("tenant-a", "nightly")


def test_sync__a_deleted_identity_is_a_conflict_and_the_command_fails(committed_clock):
    declared.sync(declared=[decl()])
    schedules.delete("tenant-a", "nightly")
    report = declared.sync(declared=[decl()])
    assert [c[:2] for c in report.conflicts] == [("tenant-a", "nightly")]


def test_declare__validates_at_once_and_refuses_two_different_declarations():
    with pytest.raises(InvalidScheduleSpec):
        declared.declare("bad", "every hour", target=touch_target(), scope="tenant-a")
    declared.declare("twice", schedules.Every(timedelta(hours=1), anchor=ANCHOR),
                     target=touch_target(), scope="tenant-a")
    try:
        with pytest.raises(DeclarationConflict, match="DS145"):
            declared.declare("twice", schedules.Every(timedelta(hours=2), anchor=ANCHOR),
                             target=touch_target(), scope="tenant-a")
    finally:
        declared.forget("tenant-a", "twice")


def test_command__syncs_the_demo_apps_declarations_and_prints_a_summary(committed_clock):
    out = StringIO()
    call_command("sync_schedules", stdout=out)
    assert "created demo/demo-hourly-touch" in out.getvalue()
    out = StringIO()
    call_command("sync_schedules", "--dry-run", stdout=out)
    assert out.getvalue().strip().endswith(
        "dry run: created=0 updated=0 unchanged=1 removed=0 pruned=0 conflicts=0")


def test_command__a_conflict_exits_non_zero(committed_clock):
    call_command("sync_schedules", stdout=StringIO())
    schedules.delete("demo", "demo-hourly-touch")
    with pytest.raises(CommandError, match="conflict"):
        call_command("sync_schedules", stdout=StringIO())


def test_concurrent_syncs__from_two_deploy_hosts_create_one_generation(committed_clock):
    env = environment(DATABASE_URL=database_url())
    cmd = [sys.executable, "testproject/manage.py", "sync_schedules"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        outs.append(out)
    assert sorted("created demo/demo-hourly-touch" in o for o in outs) == [False, True]
    info = schedules.get("demo", "demo-hourly-touch")
    assert (info.generation, info.revision) == (1, 1)


def test_sync__lifecycle_facts_are_declared_compared_and_a_second_sync_is_a_no_op(
        committed_clock):
    def with_facts(**changes):
        facts = {"overlap": "skip", "jitter": timedelta(minutes=5), "max_runs": 30,
                 "start_at": ANCHOR + timedelta(days=1), "end_at": ANCHOR + timedelta(days=60)}
        return declared.Declaration(**{**decl().__dict__, **facts, **changes})

    declared.sync(declared=[with_facts()])
    info = schedules.get("tenant-a", "nightly")
    assert (info.overlap, info.jitter, info.max_runs) == ("skip", timedelta(minutes=5), 30)
    assert (info.start_at, info.end_at) == (ANCHOR + timedelta(days=1),
                                            ANCHOR + timedelta(days=60))
    assert declared.sync(declared=[with_facts()]).unchanged == [("tenant-a", "nightly")]
    report = declared.sync(declared=[with_facts(max_runs=40, jitter=None)])
    assert report.updated == [("tenant-a", "nightly", ["max_runs", "jitter"])]
    again = schedules.get("tenant-a", "nightly")
    assert (again.generation, again.max_runs, again.jitter) == (2, 40, None)


def test_declare__refuses_bad_lifecycle_facts_at_import_time():
    from durable_schedule.errors import InvalidBounds, InvalidJitter

    every = schedules.Every(timedelta(hours=1), anchor=ANCHOR)
    with pytest.raises(InvalidBounds):
        declared.declare("b", every, target=touch_target(), scope="tenant-a", max_runs=0)
    with pytest.raises(InvalidJitter):
        declared.declare("b", every, target=touch_target(), scope="tenant-a",
                         jitter=timedelta(hours=1))
    assert all(d.schedule_id != "b" for d in declared.declarations())


def test_sync__keeps_a_paused_schedule_paused(committed_clock):
    declared.sync(declared=[decl()])
    schedules.pause("tenant-a", "nightly", "deploy freeze", actor="ops")
    declared.sync(declared=[decl(hours=12)])
    info = schedules.get("tenant-a", "nightly")
    assert (info.state, info.generation) == ("paused", 2)


def test_sync__a_declared_cron_is_created_once_and_then_unchanged(committed_clock):
    """Issue 14 item 9's own example: a Cron declaration (one spec model), with lifecycle
    facts; the second sync is a no-op although the stored cron spec carries its bound facts."""
    cron = schedules.Cron("0 2 * * *", tz="Europe/Berlin")
    nightly = declared.Declaration(scope="tenant-a", schedule_id="nightly-report", spec=cron,
                                   target=touch_target(), overlap="skip", max_runs=5)
    assert declared.sync(declared=[nightly]).created == [("tenant-a", "nightly-report")]
    committed_clock.advance(timedelta(hours=1))
    again = declared.sync(declared=[nightly])
    assert again.unchanged == [("tenant-a", "nightly-report")], again.lines()
    info = schedules.get("tenant-a", "nightly-report")
    assert (info.kind, info.generation, info.max_runs) == ("cron", 1, 5)


@pytest.mark.parametrize("repair_actor", ["root", "durable_tz_rules"])
def test_sync__a_declared_schedule_repaired_by_a_new_generation_stays_managed(committed_clock,
                                                                             repair_actor):
    """Review: an operator's re-issue (admin) or ``durable_tz_rules --apply`` writes the active
    generation under its own actor; the schedule is still the one sync created, so removing its
    declaration is still reported, and pruned with --prune."""
    declared.sync(declared=[decl("a"), decl("b")])
    info = schedules.suspend("tenant-a", "b", "clock checked by hand", actor="root")
    schedules.update("tenant-a", "b", expected_revision=info.revision, actor=repair_actor)
    assert declared.sync(declared=[decl("a"), decl("b")]).unchanged == [
        ("tenant-a", "a"), ("tenant-a", "b")]
    kept = declared.sync(declared=[decl("a")])
    assert kept.removed == [("tenant-a", "b")]
    assert declared.sync(declared=[decl("a")], prune=True).pruned == [("tenant-a", "b")]
    assert schedules.get("tenant-a", "b").state == "deleted"
