"""The store check names an unsupported database (DS452, check durable_schedule.E452) instead
of failing on its first PostgreSQL-only statement; a server older than 15 is named with its
version (README "Supported versions")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import OperationalError, connection

from durable_schedule.checks import engine_problem


def _conn(vendor="postgresql", version=None, error=None):
    class Fake(SimpleNamespace):
        @property
        def pg_version(self):
            if error:
                raise error
            return version

    return Fake(vendor=vendor, alias="jobs", settings_dict={"ENGINE": f"engine.{vendor}"})


def test_engine_check__names_the_engine_and_an_old_server():
    assert "uses 'engine.sqlite'" in engine_problem(_conn("sqlite"))
    assert "is PostgreSQL 14.9: durable_schedule needs PostgreSQL 15" in engine_problem(
        _conn(version=140009))
    assert engine_problem(_conn(version=150000)) is None
    assert engine_problem(_conn(version=180001)) is None
    # Unreachable: the store check's own W004 says so; nothing is guessed here.
    assert engine_problem(_conn(error=OperationalError("down"))) is None


@pytest.mark.django_db
def test_engine_check__the_test_server_passes():
    assert engine_problem(connection) is None
