"""The crash and soak essentials again, with every subprocess connected through a real PgBouncer
in transaction mode (``PREPARE_STATEMENTS`` off, as docs/operations.md "Connection poolers"
says): processes killed at every named barrier and recovered, and the seeded soak with SIGKILLs
and cut connections, keep the same invariants as on a direct connection.

The tests are the crash suite's own (imported, so they are one definition): only where the
subprocesses connect changes. The test's own checks and the soak's fault injector still use a
direct connection.
"""

from __future__ import annotations

import pytest

from tests.crash import harness
from tests.crash.test_barriers import (  # noqa: F401  (collected here, run through the pooler)
    test_crash__in_the_work_bridge_recovers_one_occurrence_and_one_work,
    test_crash__in_the_work_runtime_recovers_without_a_second_effect,
    test_crash__schedule_and_work_barriers_in_one_chain,
)
from tests.crash.test_soak import (  # noqa: F401
    test_soak__random_kills_and_disconnects_leave_every_instant_covered_once,
)

pytestmark = [pytest.mark.crash, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _subprocesses_through_pgbouncer(pooled_url, monkeypatch):
    monkeypatch.setattr(harness, "database_url", lambda: pooled_url)
    monkeypatch.setenv("DURABLE_PREPARE_STATEMENTS", "0")
