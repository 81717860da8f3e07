"""``durable_schedule_store_up`` is the alert docs/operations.md tells operators to page on: it
must say 0 for a store the code cannot run against (below the required schema, or a floor above
this code), exactly where ``durable_status`` exits 2, and ``--metrics`` must exit 2 as well."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from durable_schedule.observability import metrics
from durable_schedule.store.version import REQUIRED_SCHEMA, SCHEMA_VERSION

pytestmark = pytest.mark.django_db

MISFITS = {
    "below_required": (REQUIRED_SCHEMA - 1, REQUIRED_SCHEMA - 1),
    "floor_above_code": (SCHEMA_VERSION + 1, SCHEMA_VERSION + 1),
}


def _set_store(schema: int, floor: int) -> None:
    with connection.cursor() as cur:
        cur.execute("update durable_schedule_store set schema_version = %s,"
                    " compatibility_floor = %s", [schema, floor])


@pytest.mark.parametrize("misfit", sorted(MISFITS))
def test_store_up__is_zero_for_a_schema_the_code_cannot_run_against(clock, misfit):
    schema, floor = MISFITS[misfit]
    _set_store(schema, floor)
    text = metrics.exposition(include_store=True)[0].decode()
    assert "durable_schedule_store_up 0.0" in text
    # The schema gauge stays, so the alert can say why.
    assert f"durable_schedule_schema_version {float(schema)}" in text


@pytest.mark.parametrize("misfit", sorted(MISFITS))
def test_status_metrics__exits_two_like_durable_status_for_a_misfit_schema(clock, misfit):
    _set_store(*MISFITS[misfit])
    for args in (["--metrics"], ["--json"]):
        with pytest.raises(SystemExit) as exited:
            call_command("durable_status", *args, stdout=StringIO())
        assert exited.value.code == 2, args


def test_store_up__is_one_for_a_store_at_this_codes_schema(clock):
    text = metrics.exposition(include_store=True)[0].decode()
    assert "durable_schedule_store_up 1.0" in text
    call_command("durable_status", "--metrics", stdout=StringIO())  # exit 0: no SystemExit


# Role and grant drift makes durable_status exit 2 (DS304: the store cannot be used as it is),
# so the metric alerting on the same store must say 0 as well, keep the schema gauge and make
# ``--metrics`` exit 2.
ROLE_DRIFT = {
    "unexpected_grant": "grant select on durable_runner_heartbeat to durable_runtime",
    "runtime_bypasses_rls": "alter role durable_runtime bypassrls",
}


@pytest.mark.parametrize("drift", sorted(ROLE_DRIFT))
def test_store_up__is_zero_for_role_or_grant_drift_like_durable_status(clock, drift):
    with connection.cursor() as cur:  # roles too: ALTER ROLE is rolled back with the test
        cur.execute(ROLE_DRIFT[drift])
    text = metrics.exposition(include_store=True)[0].decode()
    assert "durable_schedule_store_up 0.0" in text
    assert f"durable_schedule_schema_version {float(SCHEMA_VERSION)}" in text
    assert "durable_schedule_backlog" not in text  # no store gauges while it is down
    for args in (["--metrics"], ["--json"]):
        with pytest.raises(SystemExit) as exited:
            call_command("durable_status", *args, stdout=StringIO())
        assert exited.value.code == 2, args
