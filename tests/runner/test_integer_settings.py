"""The integer and threshold settings are validated, never coerced. LEASE_SECONDS went through
int(): 2.9 silently became a 2-second lease, and NaN or a string reached the system check as
int()'s own text ("cannot convert float NaN to integer") without naming the setting. A bool
passed as 1; BACKLOG_ALERT accepted 2.5 and infinity; the health thresholds accepted infinity
(a heartbeat that never beats, a threshold JSON cannot carry)."""

from __future__ import annotations

import pytest

from durable_schedule import checks, conf

INTEGER_SETTINGS = {"LEASE_SECONDS": "from 1 to 600", "SCHEDULE_BATCH": "from 1 to 1000",
                    "BACKLOG_ALERT": ">= 1", "METRICS_PORT": "from 1 to 65535"}
BAD_INTEGERS = [2.9, float("nan"), float("inf"), "30", True, False, 0, -1, None]


# None is METRICS_PORT's documented "no metrics server", so it is not a bad value there.
BAD_CASES = [(name, value) for name in sorted(INTEGER_SETTINGS) for value in BAD_INTEGERS
             if not (name == "METRICS_PORT" and value is None)]


@pytest.mark.parametrize(("name", "value"), BAD_CASES, ids=repr)
def test_integer_settings__bad_values_are_refused_naming_the_setting_and_range(settings, name,
                                                                             value):
    settings.DURABLE_SCHEDULE = {name: value}
    with pytest.raises(ValueError) as caught:
        conf.validate()
    message = str(caught.value)
    assert f"DURABLE_SCHEDULE['{name}']" in message
    assert f"must be an integer {INTEGER_SETTINGS[name]}" in message


@pytest.mark.parametrize("name", sorted(INTEGER_SETTINGS))
def test_integer_settings__the_runtime_getter_refuses_what_validate_refuses(settings, name):
    # The getters are read by processes where no system check runs: they must not truncate.
    settings.DURABLE_SCHEDULE = {name: 2.9}
    getter = {"LEASE_SECONDS": conf.lease_seconds, "SCHEDULE_BATCH": conf.schedule_batch,
              "BACKLOG_ALERT": conf.backlog_alert, "METRICS_PORT": conf.metrics_port}[name]
    with pytest.raises(ValueError, match=name):
        getter()


def test_lease_seconds__an_integral_float_is_taken_exactly(settings):
    settings.DURABLE_SCHEDULE = {"LEASE_SECONDS": 30.0}
    conf.validate()
    assert conf.lease_seconds() == 30 and type(conf.lease_seconds()) is int


@pytest.mark.parametrize(("name", "value"), [("LEASE_SECONDS", 1), ("LEASE_SECONDS", 600),
                                             ("SCHEDULE_BATCH", 1000), ("BACKLOG_ALERT", 1),
                                             ("METRICS_PORT", 65535), ("METRICS_PORT", None)])
def test_integer_settings__the_range_bounds_pass(settings, name, value):
    settings.DURABLE_SCHEDULE = {name: value}
    conf.validate()


@pytest.mark.parametrize("name", ["HEARTBEAT_SECONDS", "RUNNER_DEAD_SECONDS",
                                  "LATENESS_ALERT_SECONDS"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), "10", True, 0, -1.0], ids=repr)
def test_health_thresholds__must_be_finite_positive_numbers(settings, name, value):
    settings.DURABLE_SCHEDULE = {name: value}
    with pytest.raises(ValueError, match=rf"DURABLE_SCHEDULE\['{name}'\] must be a finite "
                                         "positive number"):
        conf.validate()


def test_system_check__reports_the_setting_not_a_raw_conversion_error(settings):
    settings.DURABLE_SCHEDULE = {"LEASE_SECONDS": float("nan")}
    [error] = checks.check_settings()
    assert error.id == "durable_schedule.E005"
    assert error.msg.startswith("DURABLE_SCHEDULE['LEASE_SECONDS'] must be an integer from 1 "
                                "to 600")
    assert "convert" not in error.msg
