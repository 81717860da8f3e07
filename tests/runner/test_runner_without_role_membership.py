"""A runner whose database user may not act as the store's roles (no membership in
``durable_runtime`` / ``durable_dispatcher``) stops with DS302 naming the fix, not with the
server's bare "permission denied to set role" (docs/security.md, docs/diagnostics.md).
Real processes, as a real LOGIN role without the grants."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import pytest

from tests.conftest import database_url
from tests.runner.loophelpers import ROOT, sql

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ungranted_url():
    role = f"durable_test_nomember_{uuid.uuid4().hex[:8]}"
    sql(f'create role "{role}" login')
    try:
        parts = urlsplit(database_url())
        yield parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}").geturl()
    finally:
        sql(f'drop owned by "{role}"')
        sql(f'drop role "{role}"')


@pytest.mark.parametrize("args", [("process_work",), ("process_schedules",),
                                  ("process_work", "--loop"), ("process_schedules", "--loop")])
def test_a_runner_without_role_membership_exits_with_ds302(committed_clock, ungranted_url,
                                                           args):
    env = dict(os.environ, DATABASE_URL=ungranted_url, DURABLE_OUTAGE_TOLERANCE_SECONDS="5")
    result = subprocess.run([sys.executable, "testproject/manage.py", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "DS302: " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
