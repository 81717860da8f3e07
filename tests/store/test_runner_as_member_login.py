"""A runner started with the credentials of a login that is only a *member* of the store's roles
(a web user, say) instead of the migration owner stops with DS308 naming the fix, not with the
server's bare ``permission denied for function durable_schedule_enter_routed``
(docs/security.md "Roles": the routed entry is the owner's alone; the member login may enqueue
and read). Real processes, as a real LOGIN role with both memberships."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import pytest

from durable_schedule import work
from durable_schedule.work import registry
from tests.conftest import database_url
from tests.runner.loophelpers import ROOT, sql

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def member_url():
    role = f"durable_test_member_{uuid.uuid4().hex[:8]}"
    sql(f'create role "{role}" login')
    sql(f'grant durable_runtime, durable_dispatcher to "{role}"')
    try:
        parts = urlsplit(database_url())
        yield parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}").geturl()
    finally:
        sql(f'revoke durable_runtime, durable_dispatcher from "{role}"')
        sql(f'drop owned by "{role}"')
        sql(f'drop role "{role}"')


@pytest.fixture
def due_work(committed_clock):
    definition = registry.define("demo.invoice", "v1", safety="idempotent")
    try:
        work.enqueue("member-login", definition.request(command="c", idempotency_key="k",
                                                        payload={}))
        yield
    finally:
        registry._unregister(definition.name, definition.version)


def test_a_work_runner_as_a_member_login_exits_with_ds308(due_work, member_url):
    env = dict(os.environ, DATABASE_URL=member_url, DURABLE_OUTAGE_TOLERANCE_SECONDS="5")
    result = subprocess.run([sys.executable, "testproject/manage.py", "process_work"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "DS308: " in result.stderr, result.stderr
    assert "migration owner" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
