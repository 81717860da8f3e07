"""The drift check (``manage.py check`` E003, ``durable_status``) covers the identity sequences of
the store's tables and every function the runtime role executes (docs/security.md "Roles").

Before, neither was compared with the contract, in either direction:

- ``GRANT UPDATE ON SEQUENCE durable_work_id_seq TO durable_runtime`` (or to PUBLIC) was silent,
  and lets the role ``setval`` the sequence back: every later insert into that table, in every
  scope, fails on the primary key (or on "reached maximum value"); ``SELECT`` reads
  ``last_value``, how many rows every tenant together has written; any privilege of the
  dispatcher on a sequence was silent too, though the dispatcher holds nothing but its claim;
- ``REVOKE USAGE ON SEQUENCE ... FROM durable_runtime`` was silent, and every insert into the
  table fails ("permission denied for sequence");
- ``REVOKE EXECUTE ON FUNCTION durable_schedule_accept_rows(text, jsonb) FROM durable_runtime``
  was silent, and every ``enqueue`` fails (the acceptance function calls it as the runtime), as
  does ``durable_work_identifiers_ok`` (the Work table's insert trigger calls it as the runtime)
  and ``durable_schedule_accept_work`` for an application login that is a member of the runtime
  but not the owner.

Each change is made in the test's own transaction and rolled back with it."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from durable_schedule.store import inspection

pytestmark = pytest.mark.django_db

SEQ = "durable_work_id_seq"

DRIFTS = {
    "runtime_update": (f"grant update on sequence {SEQ} to durable_runtime",
                       f"durable_runtime has unexpected UPDATE on sequence {SEQ}"),
    "runtime_select": (f"grant select on sequence {SEQ} to durable_runtime",
                       f"durable_runtime has unexpected SELECT on sequence {SEQ}"),
    "dispatcher_usage": (f"grant usage on sequence {SEQ} to durable_dispatcher",
                         f"durable_dispatcher has unexpected USAGE on sequence {SEQ}"),
    "public_update": ("grant update on sequence durable_schedule_scope_routing_id_seq to public",
                      "PUBLIC has unexpected UPDATE on sequence "
                      "durable_schedule_scope_routing_id_seq"),
    "runtime_no_usage": (f"revoke usage on sequence {SEQ} from durable_runtime",
                         f"durable_runtime lacks USAGE on sequence {SEQ}"),
    "accept_rows": ("revoke execute on function durable_schedule_accept_rows(text, jsonb) "
                    "from durable_runtime",
                    "durable_runtime lacks EXECUTE on durable_schedule_accept_rows(text, jsonb)"),
    "accept_work": ("revoke execute on function durable_schedule_accept_work(text, jsonb, "
                    "boolean) from durable_runtime",
                    "durable_runtime lacks EXECUTE on durable_schedule_accept_work(text, jsonb, "
                    "boolean)"),
    "identifiers_ok": ("revoke execute on function durable_work_identifiers_ok(text, text, "
                       "text, text) from durable_runtime",
                       "durable_runtime lacks EXECUTE on durable_work_identifiers_ok(text, text, "
                       "text, text)"),
}


def problems() -> list[str]:
    return [m.msg for m in checks.run_checks() if m.id == "durable_schedule.E003"]


def test_check__the_contract_store_has_no_sequence_or_function_finding():
    assert problems() == []


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_check__reports_sequence_and_runtime_function_drift(drift):
    statement, expected = DRIFTS[drift]
    with connection.cursor() as cur:
        cur.execute(statement)
    found = problems()
    assert any(expected in m for m in found), found


def test_check__every_identity_sequence_of_the_store_is_compared():
    # The check finds the sequences from the catalogue (the identity columns of the store's
    # tables), not from a list: each one's USAGE revoked is reported by name.
    with connection.cursor() as cur:
        cur.execute("""select s.relname from pg_depend d
                         join pg_class s on s.oid = d.objid and s.relkind = 'S'
                         join pg_class t on t.oid = d.refobjid
                        where d.classid = 'pg_class'::regclass and d.deptype in ('a', 'i')
                          and t.relname like 'durable%%' and not t.relispartition""")
        sequences = sorted(r[0] for r in cur.fetchall())
        assert len(sequences) >= 11
        for seq in sequences:
            cur.execute(f"revoke usage on sequence {seq} from durable_runtime")
        found = inspection.grant_problems(cur)
    for seq in sequences:
        assert f"durable_runtime lacks USAGE on sequence {seq}" in "\n".join(found), seq


def test_recipe__grants_every_function_the_runtime_executes():
    recipe = inspection.grant_recipe()
    for fn in ("durable_schedule_accept_work(text, jsonb, boolean)",
               "durable_schedule_accept_rows(text, jsonb)",
               "durable_work_identifiers_ok(text, text, text, text)"):
        assert f"GRANT EXECUTE ON FUNCTION {fn} TO durable_runtime;" in recipe


def test_check__a_newer_schema_may_add_an_owner_only_sequence_but_never_widens_one():
    # A newer compatible schema may add a table whose identity is the owner's alone: this
    # code's runners keep starting. A widened privilege is reported at every schema.
    with connection.cursor() as cur:
        cur.execute(f"revoke usage on sequence {SEQ} from durable_runtime")
        cur.execute(f"grant update on sequence {SEQ} to durable_runtime")
        found = inspection.grant_problems(cur, schema_version=inspection.SCHEMA_VERSION + 1)
    assert not any("lacks USAGE on sequence" in p for p in found), found
    assert any(f"durable_runtime has unexpected UPDATE on sequence {SEQ}" in p for p in found)
