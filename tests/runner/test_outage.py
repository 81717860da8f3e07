"""The outage ride-out of ``--loop`` runners (runner/outage.py), with the database replaced by a
probe and time by a fake clock: one log line per state change, the tolerance from the setting,
DS405 past it, a stop during the outage, the counters for exporters. The real outage (PgBouncer
stopped and started under running loops) is in tests/pooler/test_failover.py."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError

from durable_schedule import conf
from durable_schedule.errors import RetriesExhausted
from durable_schedule.runner import outage, state


class FakeTime:
    """A clock that the stop flag's waits advance: no real sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.stop_after: float | None = None
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        return self.stop_after is not None and self.now >= self.stop_after


def failing_probe(times: int):
    calls = []

    def probe():
        calls.append(1)
        if len(calls) <= times:
            raise OperationalError("connection refused")

    return probe, calls


def lines(caplog, marker: str) -> int:
    return sum(marker in r.getMessage() for r in caplog.records)


@pytest.fixture(autouse=True)
def _fresh_state():
    state.reset()
    yield
    state.reset()


def test_outage__reconnects_and_logs_each_state_change_once(settings, caplog):
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": 120}
    fake = FakeTime()
    probe, calls = failing_probe(times=5)
    caplog.set_level(logging.WARNING, "durable_schedule.runner")
    assert outage.ride_out("work", OperationalError("gone"), fake, probe=probe, clock=fake.clock)
    assert len(calls) == 6
    assert lines(caplog, "database connection lost") == 1
    assert lines(caplog, "database still down") == 1
    assert lines(caplog, "database connection restored") == 1
    snap = state.snapshot()["work"]
    assert snap["outages"] == 1 and snap["reconnects"] == 1 and snap["connected"] is True
    assert snap["last_outage_seconds"] == pytest.approx(sum(fake.waits))
    assert all(w <= outage.BACKOFF_CAP for w in fake.waits)


def test_outage__gives_up_with_ds405_naming_the_setting_after_the_tolerance(settings):
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": 30}
    fake = FakeTime()
    probe, _ = failing_probe(times=10**6)
    with pytest.raises(RetriesExhausted) as info:
        outage.ride_out("schedule", OperationalError("gone"), fake, probe=probe, clock=fake.clock)
    err = info.value
    assert err.code == "DS405" and "OUTAGE_TOLERANCE_SECONDS" in str(err)
    assert err.context["phase"] == "schedule.reconnect"
    assert isinstance(err.__cause__, OperationalError)
    assert sum(fake.waits) == pytest.approx(30)  # waited the tolerance, not longer
    assert state.snapshot()["schedule"]["connected"] is False


def test_outage__a_stop_during_the_outage_returns_false(settings):
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": 300}
    fake = FakeTime()
    fake.stop_after = fake.now + 5
    probe, _ = failing_probe(times=10**6)
    assert outage.ride_out("work", OperationalError("gone"), fake, probe=probe,
                           clock=fake.clock) is False


@pytest.mark.parametrize("value", [-1, "300", True, None])
def test_outage__the_setting_is_validated(settings, value):
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": value}
    with pytest.raises(ValueError, match="OUTAGE_TOLERANCE_SECONDS"):
        conf.validate()


def test_outage__the_default_is_five_minutes(settings):
    settings.DURABLE_SCHEDULE = {}
    assert conf.outage_tolerance_seconds() == 300
