"""A ``--loop`` runner whose ``METRICS_PORT`` cannot be served (another runner on the host took
it, a port below 1024 without the privilege) stops with DS445 before it registers or claims
anything, instead of a raw ``OSError`` traceback (docs/operations.md "Metrics")."""

from __future__ import annotations

import socket

import pytest

from tests.runner.loophelpers import sql, start_loop, stop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def taken_port():
    """A TCP port some other process already listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("command", ["process_schedules", "process_work"])
def test_a_taken_metrics_port_stops_the_runner_with_ds445_before_it_registers(
        committed_clock, taken_port, command):
    proc = start_loop(command, env={"DURABLE_METRICS_PORT": str(taken_port)})
    try:
        out, _ = proc.communicate(timeout=60)  # a runner that ignored the clash keeps running
    finally:
        if proc.poll() is None:
            stop(proc)
    code = proc.returncode
    assert code != 0, out
    assert "DS445" in out, out
    assert "METRICS_PORT" in out and str(taken_port) in out, out
    assert "Traceback" not in out, out
    # refused before the first heartbeat: nothing registered, nothing claimed
    assert sql("select count(*) from durable_runner_heartbeat") == [(0,)]
