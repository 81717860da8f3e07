"""``manage.py check`` (durable_schedule.E003) and ``durable_status`` promise to report a store
whose security drifted from the contract (docs/security.md): not only a missing grant, but
every grant, policy or RLS switch that widens what the runtime or dispatcher role may reach.
Each statement below widens it by hand; each must be reported. The changes are made in the
test's own transaction and rolled back with it."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

pytestmark = pytest.mark.django_db

ISOLATION = ("scope_id = NULLIF(pg_catalog.current_setting('durable_schedule.scope_id', true),"
             " '')")

DRIFTS = {
    # TRUNCATE ignores row-level security: every scope's Work at once.
    "truncate": ("grant truncate on durable_work to durable_runtime",
                 "durable_runtime has unexpected TRUNCATE on durable_work"),
    "dispatcher_truncate": ("grant truncate on durable_work_dispatch to durable_dispatcher",
                            "durable_dispatcher has table privileges on durable_work_dispatch"),
    "public_truncate": ("grant truncate on durable_schedule_history to public",
                        "has unexpected TRUNCATE on durable_schedule_history"),
    # Column grants: the runtime never updates identity or scope columns.
    "update_scope_id": ("grant update (scope_id) on durable_work to durable_runtime",
                        "durable_runtime has unexpected UPDATE (scope_id) on durable_work"),
    "update_payload": ("grant update (payload) on durable_work to durable_runtime",
                       "durable_runtime has unexpected UPDATE (payload) on durable_work"),
    "insert_generation": ("grant insert (generation) on durable_schedule_scope to "
                          "durable_runtime",
                          "durable_runtime has unexpected INSERT (generation) on "
                          "durable_schedule_scope"),
    # A policy that admits every scope, an extra permissive policy, RLS lifted.
    "open_policy": ("alter policy durable_scope_isolation on durable_work using (true)",
                    "policy durable_scope_isolation on durable_work is not the contract's"),
    "extra_policy": ("create policy everything on durable_work_permit using (true)",
                     "unexpected policy everything on durable_work_permit"),
    "dropped_policy": ("drop policy durable_scope_isolation on durable_work_history",
                       "policy durable_scope_isolation on durable_work_history is missing"),
    "no_force": ("alter table durable_work no force row level security",
                 "row-level security is not enabled and forced on durable_work"),
    "disabled": ("alter table durable_schedule_occurrence disable row level security",
                 "row-level security is not enabled and forced on durable_schedule_occurrence"),
    # History partitions carry their own grants and policy.
    "partition_grant": ("grant select on durable_schedule_history_default to "
                        "durable_dispatcher",
                        "durable_dispatcher has table privileges on "
                        "durable_schedule_history_default"),
    "partition_update": ("grant update on durable_schedule_history_default to "
                         "durable_runtime",
                         "durable_runtime has unexpected UPDATE on "
                         "durable_schedule_history_default"),
    "partition_policy": ("alter policy durable_scope_isolation on "
                         "durable_schedule_history_default using (true)",
                         "policy durable_scope_isolation on durable_schedule_history_default "
                         "is not the contract's"),
}


def problems() -> list[str]:
    return [m.msg for m in checks.run_checks() if m.id == "durable_schedule.E003"]


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_check__reports_a_widened_grant_policy_or_rls_switch(drift):
    statement, expected = DRIFTS[drift]
    with connection.cursor() as cur:
        cur.execute(statement)
    found = problems()
    assert any(expected in m for m in found), found


def test_check__a_policy_restored_to_the_contract_is_silent_again():
    with connection.cursor() as cur:
        cur.execute("alter policy durable_scope_isolation on durable_work using (true)")
        cur.execute(f"alter policy durable_scope_isolation on durable_work using ({ISOLATION})")
    assert problems() == []


def test_check__an_archived_month_is_not_drift():
    # Archiving detaches a month, revokes the runtime's grants and lifts FORCE RLS
    # (operations/archive.py): a detached table is the owner's archive, not a live partition.
    with connection.cursor() as cur:
        cur.execute("create table durable_schedule_history_200001 partition of "
                    "durable_schedule_history for values from ('2000-01-01') to ('2000-02-01')")
        cur.execute("alter table durable_schedule_history detach partition "
                    "durable_schedule_history_200001")
        cur.execute("revoke all on durable_schedule_history_200001 from durable_runtime")
        cur.execute("alter table durable_schedule_history_200001 no force row level security")
    assert problems() == []


@pytest.mark.parametrize("statement", [
    "alter function claim_work_dispatch(text, interval, integer, text[]) reset search_path",
    "alter function durable_runner_beat(uuid, text, text, text, integer, text, double precision,"
    " bigint, jsonb, boolean) set search_path = public, pg_temp, \"$user\"",
])
def test_check__a_security_definer_function_without_its_pinned_search_path_is_reported(
        statement):
    # A SECURITY DEFINER function resolves names with the owner's rights: unpinned (or with a
    # schema the caller may create objects in), a caller's planted function or table is used.
    with connection.cursor() as cur:
        cur.execute(statement)
    found = problems()
    assert any("SECURITY DEFINER" in m and "search_path" in m for m in found), found


@pytest.mark.parametrize("statement", [
    "grant update (payload) on durable_work to durable_runtime",
    "create policy newer_migration on durable_work_permit for select to durable_runtime"
    " using (false)",
])
def test_check__a_newer_compatible_schema_may_add_grants_and_policies(statement):
    # A store migrated past this code (its floor still admits it: a rolling upgrade) may grant
    # columns or add policies this code's contract does not know; that is not drift, and
    # reporting it (E003) would stop this code's runners during the upgrade.
    from durable_schedule.store.version import SCHEMA_VERSION

    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = %s",
                    [SCHEMA_VERSION + 1])
        cur.execute(statement)
    assert problems() == []


@pytest.mark.parametrize("drift", ["truncate", "no_force", "disabled"])
def test_check__a_newer_schema_still_never_truncates_or_lifts_rls(drift):
    from durable_schedule.store.version import SCHEMA_VERSION

    statement, expected = DRIFTS[drift]
    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = %s",
                    [SCHEMA_VERSION + 1])
        cur.execute(statement)
    found = problems()
    assert any(expected in m for m in found), found


def test_check__a_policy_calling_a_lookalike_function_of_the_app_schema_is_reported():
    # Same text once qualifiers are dropped, another function: it may answer any scope.
    with connection.cursor() as cur:
        cur.execute("select current_schema()")
        schema = cur.fetchone()[0]
        cur.execute(f'create function "{schema}".current_setting(text, boolean)'
                    " returns text language sql as $$ select 'tenant-b' $$")
        cur.execute("alter policy durable_scope_isolation on durable_work using (scope_id ="
                    f' NULLIF("{schema}".current_setting(\'durable_schedule.scope_id\','
                    " true), ''))")
    found = problems()
    assert any("policy durable_scope_isolation on durable_work is not the contract's" in m
               for m in found), found


def test_check__an_old_store_is_a_ds401_error_not_an_unreadable_warning():
    # A store many schemas below the floor lacks tables and columns the grant contract names:
    # reading the grants failed and the check said only W004 ("cannot read"), a warning, so
    # `manage.py check` passed and commands ran against it. Below the floor the grants are not
    # compared at all (migrate first); the finding is DS401 (E002).
    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = 4,"
                    " compatibility_floor = 4")
        cur.execute("drop table durable_runner_heartbeat")  # created by schema 5
    found = {m.id: m.msg for m in checks.run_checks() if m.id.startswith("durable_schedule")}
    assert "durable_schedule.W004" not in found, found
    assert "DS401" in found.get("durable_schedule.E002", ""), found


def test_status__an_old_store_is_a_ds401_not_an_unreachable_store():
    import json
    from io import StringIO

    from django.core.management import call_command

    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = 4,"
                    " compatibility_floor = 4")
        cur.execute("drop table durable_schedule_routing")  # created by schema 5
    out = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("durable_status", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert exited.value.code == 2
    assert report["reachable"] and report["migrated"], report["problems"]
    assert any(p.startswith("DS401") for p in report["problems"]), report["problems"]
