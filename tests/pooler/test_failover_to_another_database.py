"""A ``--loop`` runner that rides out an outage and finds another database where its store was
(a restore into a new cluster or database, a DNS name or pooler entry now pointing elsewhere)
stops with DS446 instead of carrying on against it (docs/operations.md "Failover and database
outages"). Here PgBouncer is stopped and started again pointing at a copy of the test database:
the same schema and rows, another database."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

import psycopg
import pytest
from django.db import connection

from tests.conftest import database_url
from tests.pooler.test_failover import Loop
from tests.runner.loophelpers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def _admin(statement: str) -> None:
    """Run ``statement`` on the server's maintenance database (not the test database)."""
    url = urlsplit(database_url())._replace(path="/postgres").geturl()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def test_a_loop_that_comes_back_to_another_database_stops_with_ds446(
        pgbouncer, pooled_url, committed_clock):
    test_db = connection.settings_dict["NAME"]
    copy = f"{test_db}_copy"
    loop = Loop(pooled_url, "process_work", DURABLE_OUTAGE_TOLERANCE_SECONDS="120")
    try:
        wait_until(lambda: loop.said("work pass 1:"), timeout=60, what="the first pass")
        pgbouncer.stop()
        wait_until(lambda: loop.said("database connection lost"), timeout=60,
                   what="the loop to notice the outage")
        connection.close()  # CREATE DATABASE ... TEMPLATE needs the template to itself
        _admin(f'drop database if exists "{copy}"')
        _admin(f'create database "{copy}" template "{test_db}"')
        ini = pgbouncer.dir / "pgbouncer.ini"
        ini.write_text(re.sub(r"^\* = (.*)$", rf"* = \1 dbname={copy}", ini.read_text(),
                              count=1, flags=re.MULTILINE))
        pgbouncer.start()
        end = time.monotonic() + 60
        while loop.proc.poll() is None and time.monotonic() < end:
            time.sleep(0.1)
        code, out = loop.finish()
        assert loop.said("work pass 2:") == 0, out  # no pass ran against the other database
        assert code != 0, out
        assert "DS446" in out, out
    finally:
        loop.finish()
        pgbouncer.stop()
        _admin(f'drop database if exists "{copy}" with (force)')
