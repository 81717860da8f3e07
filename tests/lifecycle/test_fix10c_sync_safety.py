"""sync_schedules safety: --prune with nothing declared is refused (DS159) unless
--allow-empty; the sync actor is reserved (DS156) so no other caller makes a schedule look
managed; a declaration naming a schedule sync did not create is a conflict (DS157) unless
--adopt; the deleted-identity conflict carries DS158."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from durable_schedule import schedules
from durable_schedule.errors import DurableError
from durable_schedule.schedules import declared
from tests.lifecycle.test_declared import decl, touch_target
from tests.schedules.conftest import history as schedule_history

pytestmark = pytest.mark.django_db(transaction=True)


def history(scope, schedule_id):
    return [(event, actor) for event, actor, _ in schedule_history(schedule_id, scope)]


# ---------------------------------------------------------------- 1. prune with nothing declared
def test_sync__prune_with_nothing_declared_is_refused_and_changes_nothing(committed_clock):
    declared.sync(declared=[decl("a"), decl("b", scope="tenant-b")])
    before = [schedules.get(s, i) for s, i in (("tenant-a", "a"), ("tenant-b", "b"))]
    for dry_run in (False, True):
        with pytest.raises(DurableError, match="DS159"):
            declared.sync(declared=[], prune=True, dry_run=dry_run)
    after = [schedules.get(s, i) for s, i in (("tenant-a", "a"), ("tenant-b", "b"))]
    assert [(i.state, i.revision) for i in after] == [(i.state, i.revision) for i in before]
    assert [i.state for i in after] == ["active", "active"]


def test_sync__prune_with_nothing_declared_and_allow_empty_deletes_every_managed_schedule(
        committed_clock):
    declared.sync(declared=[decl("a"), decl("b", scope="tenant-b")])
    report = declared.sync(declared=[], prune=True, allow_empty=True)
    assert sorted(report.pruned) == [("tenant-a", "a"), ("tenant-b", "b")]
    assert schedules.get("tenant-b", "b").state == "deleted"


def test_sync__nothing_declared_without_prune_only_reports(committed_clock):
    declared.sync(declared=[decl("a")])
    report = declared.sync(declared=[])
    assert report.removed == [("tenant-a", "a")] and report.pruned == []


def test_command__prune_when_discovery_finds_nothing_exits_non_zero(committed_clock,
                                                                   monkeypatch):
    call_command("sync_schedules", stdout=StringIO())
    # Discovery that finds nothing (wrong --settings, an app missing from INSTALLED_APPS).
    monkeypatch.setattr(declared, "autodiscover", lambda: None)
    monkeypatch.setattr(declared, "declarations", lambda: [])
    with pytest.raises(CommandError, match="DS159"):
        call_command("sync_schedules", "--prune", stdout=StringIO())
    assert schedules.get("demo", "demo-hourly-touch").state == "active"
    out = StringIO()
    call_command("sync_schedules", "--prune", "--allow-empty", stdout=out)
    assert "pruned demo/demo-hourly-touch" in out.getvalue()
    assert schedules.get("demo", "demo-hourly-touch").state == "deleted"


# ---------------------------------------------------------------- 2. the reserved actor
def test_api__refuses_the_sync_actor_to_other_callers_and_writes_nothing(committed_clock):
    with pytest.raises(DurableError, match="DS156"):
        schedules.create("tenant-a", "hand-made", schedules.Every(timedelta(hours=1)),
                         touch_target(), actor=declared.SYNC_ACTOR)
    with pytest.raises(Exception, match="DS108"):
        schedules.get("tenant-a", "hand-made")
    info = schedules.create("tenant-a", "hand-made", schedules.Every(timedelta(hours=1)),
                            touch_target(), actor="alice")
    for call in (
        lambda: schedules.update("tenant-a", "hand-made", expected_revision=info.revision,
                                 actor=declared.SYNC_ACTOR),
        lambda: schedules.suspend("tenant-a", "hand-made", "outage", actor=declared.SYNC_ACTOR),
        lambda: schedules.delete("tenant-a", "hand-made", actor=declared.SYNC_ACTOR),
    ):
        with pytest.raises(DurableError, match="DS156"):
            call()
    after = schedules.get("tenant-a", "hand-made")
    assert (after.state, after.revision, after.generation) == ("active", info.revision, 1)
    # Not managed: a prune that declares something else leaves it alone.
    assert declared.sync(declared=[decl("other")], prune=True).pruned == []
    assert schedules.get("tenant-a", "hand-made").state == "active"


def test_api__every_schedule_call_and_command_refuses_the_sync_actor(committed_clock):
    from durable_schedule.operations.recovery import bump_runtime_epoch

    info = schedules.create("tenant-a", "hand-made", schedules.Every(timedelta(hours=1)),
                            touch_target(), actor="alice")
    reserved = declared.SYNC_ACTOR
    for call in (
        lambda: schedules.pause("tenant-a", "hand-made", "maintenance", actor=reserved),
        lambda: schedules.trigger("tenant-a", "hand-made", "req-1", actor=reserved),
        lambda: schedules.release_after_recovery("tenant-a", "hand-made", actor=reserved),
    ):
        with pytest.raises(DurableError, match="DS156"):
            call()
    assert schedules.get("tenant-a", "hand-made").revision == info.revision
    # The commands check --actor before their first step commits anything.
    epoch = bump_runtime_epoch(dry_run=True).before
    with pytest.raises(CommandError, match="DS156"):
        call_command("durable_recover", "--bump-epoch", "--release-all", "--actor", reserved,
                     stdout=StringIO())
    assert bump_runtime_epoch(dry_run=True).before == epoch
    with pytest.raises(CommandError, match="DS129: --actor is not valid .*reserved"):
        call_command("durable_tz_rules", "--apply", "--actor", reserved, stdout=StringIO())


def test_errors__the_codes_name_their_classes():
    from durable_schedule import errors

    assert (errors.EmptyPruneRefused.code, errors.ReservedActor.code,
            errors.DeclaredScheduleNotManaged.code, errors.DeclaredIdentityDeleted.code) == (
        "DS159", "DS156", "DS157", "DS158")


def test_api__the_sync_path_itself_still_writes_under_the_sync_actor(committed_clock):
    declared.sync(declared=[decl("a")])
    declared.sync(declared=[decl("a", hours=12)])
    declared.sync(declared=[], prune=True, allow_empty=True)
    assert history("tenant-a", "a") == [("created", declared.SYNC_ACTOR),
                                        ("updated", declared.SYNC_ACTOR),
                                        ("deleted", declared.SYNC_ACTOR)]


# ---------------------------------------------------------------- 3. adoption
def hand_made(**payload):
    return schedules.create("tenant-a", "nightly", decl().spec, touch_target(**payload),
                            actor="alice")


def test_sync__a_declaration_naming_a_hand_made_schedule_is_a_conflict(committed_clock):
    made = hand_made(kind="by-hand")
    report = declared.sync(declared=[decl(kind="declared"), decl("other")])
    assert [c[:2] for c in report.conflicts] == [("tenant-a", "nightly")]
    assert report.conflicts[0][2].startswith("DS157: ")
    assert "created_by='alice'" in report.conflicts[0][2]
    assert report.created == [("tenant-a", "other")]  # the rest is applied
    info = schedules.get("tenant-a", "nightly")
    assert (info.revision, info.generation, info.target_json["payload"]) == (
        made.revision, 1, {"kind": "by-hand"})
    # Unchanged facts are no exception: still not sync's to manage.
    same = declared.sync(declared=[decl(kind="by-hand"), decl("other")])
    assert [c[:2] for c in same.conflicts] == [("tenant-a", "nightly")]
    assert same.unchanged == [("tenant-a", "other")]
    # Never adopted, so never pruned.
    declared.sync(declared=[decl("other")], prune=True)
    assert schedules.get("tenant-a", "nightly").state == "active"


def test_sync__adopt_takes_a_hand_made_schedule_over_with_one_generation(committed_clock):
    made = hand_made(kind="by-hand")
    report = declared.sync(declared=[decl(kind="by-hand")], adopt=True)
    assert report.adopted == [("tenant-a", "nightly", [])] and not report.conflicts
    assert "adopted tenant-a/nightly (nothing differed): now managed by sync" in report.lines()
    assert report.summary().endswith("conflicts=0 adopted=1")
    info = schedules.get("tenant-a", "nightly")
    assert (info.generation, info.created_by) == (2, declared.SYNC_ACTOR)
    assert info.revision > made.revision
    # Managed now: the next sync (no --adopt) finds it unchanged, a later prune deletes it.
    assert declared.sync(declared=[decl(kind="by-hand")]).unchanged == [("tenant-a", "nightly")]
    assert declared.sync(declared=[decl("other")], prune=True).pruned == [("tenant-a", "nightly")]


def test_sync__adopt_of_an_operator_suspension_is_held(committed_clock):
    hand_made()
    suspended = schedules.suspend("tenant-a", "nightly", "provider outage", actor="ops")
    report = declared.sync(declared=[decl()], adopt=True)
    assert report.held == [("tenant-a", "nightly", [])] and not report.adopted
    assert report.held_adoptions == [("tenant-a", "nightly")]
    assert report.lines() == [
        "held tenant-a/nightly (adoption; nothing changed): suspended by an operator, not "
        "adopted; the next sync --adopt after the suspension is repaired adopts it"]
    info = schedules.get("tenant-a", "nightly")
    assert (info.state, info.revision) == ("suspended", suspended.revision)


def test_command__a_hand_made_schedule_is_a_conflict_unless_adopt(committed_clock):
    schedules.create("demo", "demo-hourly-touch", schedules.Every(timedelta(hours=1)),
                     touch_target(), actor="alice")
    out = StringIO()
    with pytest.raises(CommandError, match=r"1 declaration\(s\) conflict with the store \(DS157;"):
        call_command("sync_schedules", stdout=out)
    assert "conflict demo/demo-hourly-touch: DS157: " in out.getvalue()
    assert schedules.get("demo", "demo-hourly-touch").generation == 1
    out = StringIO()
    call_command("sync_schedules", "--adopt", stdout=out)
    assert "adopted demo/demo-hourly-touch" in out.getvalue()
    assert schedules.get("demo", "demo-hourly-touch").created_by == declared.SYNC_ACTOR


def test_sync__the_deleted_identity_conflict_carries_its_code(committed_clock):
    declared.sync(declared=[decl()])
    schedules.delete("tenant-a", "nightly")
    report = declared.sync(declared=[decl()], adopt=True)
    assert report.conflicts[0][2].startswith("DS158: the declared identity was deleted")
    assert "conflict tenant-a/nightly: DS158: " in report.lines()[-1]
