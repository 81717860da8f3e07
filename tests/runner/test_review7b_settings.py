"""NaN is refused for the runner's timing settings. It passed the old "<= 0" / "< 0" tests and
then compared false with everything: as MAX_IDLE_SECONDS a --loop runner's idle wait came out
0 and it ran passes back to back (or Event.wait(nan) raised); as OUTAGE_TOLERANCE_SECONDS the
outage loop never gave up and waited min(delay, max(0, nan - elapsed)) = 0 between probes,
reconnecting in a tight loop. A string MAX_IDLE_SECONDS ("5") was float()-ed silently."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from durable_schedule import conf
from durable_schedule.runner import outage


@pytest.mark.parametrize("name", ["MAX_IDLE_SECONDS", "OUTAGE_TOLERANCE_SECONDS"])
def test_settings__nan_is_refused(settings, name):
    settings.DURABLE_SCHEDULE = {name: float("nan")}
    with pytest.raises(ValueError, match=name):
        conf.validate()


@pytest.mark.parametrize("value", ["5", True, 0, -1.0, None])
def test_settings__max_idle_seconds_must_be_a_positive_number(settings, value):
    settings.DURABLE_SCHEDULE = {"MAX_IDLE_SECONDS": value}
    with pytest.raises(ValueError, match="MAX_IDLE_SECONDS"):
        conf.validate()


@pytest.mark.parametrize(("name", "value"), [("MAX_IDLE_SECONDS", 0.5),
                                             ("MAX_IDLE_SECONDS", float("inf")),
                                             ("OUTAGE_TOLERANCE_SECONDS", 0),
                                             ("OUTAGE_TOLERANCE_SECONDS", float("inf"))])
def test_settings__finite_and_infinite_values_still_pass(settings, name, value):
    settings.DURABLE_SCHEDULE = {name: value}
    conf.validate()


def test_outage__never_waits_zero_between_probes_under_a_valid_tolerance(settings):
    # What the NaN tolerance broke: each wait between probes is the jittered backoff (> 0).
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": 30}
    waits: list[float] = []

    class Stop:
        def wait(self, seconds):
            waits.append(seconds)
            return len(waits) >= 5

    def probe():
        raise OperationalError("still down")

    assert outage.ride_out("work", OperationalError("gone"), Stop(), probe=probe,
                           clock=lambda: 0.0) is False
    assert len(waits) == 5 and all(w > 0 for w in waits)
