"""Edges of the runners' outage handling (docs/operations.md "Failover and database outages"):

- a runner's last heartbeat (``stopped_at``) is written even when the connection it sat on was
  cut while the runner was idle (failover, pooler restart, ``pg_terminate_backend``,
  ``idle_session_timeout``): otherwise a clean stop reads as a dead runner;
- the outage budget ``OUTAGE_TOLERANCE_SECONDS`` runs from the first lost pass until a pass
  succeeds again, not from the last time ``select 1`` answered: a database that answers the
  reconnect probe but cuts every pass (a crash-looping server, a pooler that drops the server
  connection mid-transaction) made the loop reconnect forever instead of exiting with DS405;
- a listener that could not be opened (the database starting up or out of connection slots
  while the runner's other connections were fine) is opened again after the next good pass:
  the loop polled every ``MAX_IDLE_SECONDS`` for the rest of its life.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

from durable_schedule.errors import RetriesExhausted
from durable_schedule.observability.heartbeat import Heartbeat
from durable_schedule.runner import loop, outage, pooler, retry, state
from tests.runner.loophelpers import sql


def test_heartbeat__stop_is_recorded_after_the_idle_connection_was_cut(committed_clock):
    beat = Heartbeat("work", lease_owner="host-z:1", interval=3600)
    beat.start()
    pid = connection.connection.info.backend_pid
    assert sql("select pg_terminate_backend(%s)", (pid,)) == [(True,)]
    beat.stop()
    assert sql("select lease_owner, stopped_at is not null from durable_runner_heartbeat") == [
        ("host-z:1", True)]
    assert connection.connection.info.backend_pid != pid  # it reconnected once


def test_heartbeat__stop_with_the_database_away_still_returns(committed_clock, monkeypatch):
    beat = Heartbeat("work", lease_owner="host-y:1", interval=3600)
    beat.start()
    calls = []

    def away(**_kw):
        calls.append(1)
        raise OperationalError("connection refused")

    monkeypatch.setattr(beat, "write", away)
    beat.stop()  # logs, never raises; one reconnect, not a retry loop
    assert len(calls) == 2


class FakeTime:
    """Monotonic time that the stop flag's waits and the failed passes advance."""

    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now


class FakeStop(loop.StopFlag):
    def __init__(self, fake: FakeTime) -> None:
        super().__init__()
        self.fake = fake

    def wait(self, seconds: float) -> bool:
        self.fake.now += seconds
        return self.is_set()


def test_loop__gives_up_when_every_pass_is_cut_although_the_probe_answers(settings,
                                                                          monkeypatch):
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": 20}
    state.reset()
    fake = FakeTime()
    stop = FakeStop(fake)
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))
    monkeypatch.setattr(loop, "_open_listener", lambda name, channel: (None, False))
    real_ride_out = outage.ride_out
    monkeypatch.setattr(outage, "ride_out", lambda name, exc, stop_, **kw: real_ride_out(
        name, exc, stop_, probe=lambda: None, clock=fake.clock, **kw))
    passes = []

    def cut_pass():
        passes.append(1)
        if len(passes) > 400:  # the old behaviour: reconnecting for ever; end the test
            stop.set()
        fake.now += 0.5  # the pass and its retries take time too
        raise OperationalError("server closed the connection unexpectedly")

    with pytest.raises(RetriesExhausted, match="DS405.*OUTAGE_TOLERANCE_SECONDS"):
        loop.run_loop(name="work", run_once=cut_pass, channel="durable_work_due",
                      seconds_until_due=lambda: -1.0, stop=stop)
    assert not stop.is_set()
    # Each pass is 4 tries (3 retries), every reconnect answered, and the budget still ran out.
    assert 0 < len(passes) < 400 and len(passes) % 4 == 0
    assert state.snapshot()["work"]["connected"] is False
    state.reset()


def test_loop__a_good_pass_ends_the_outage_and_resets_the_budget(settings, monkeypatch):
    settings.DURABLE_SCHEDULE = {"OUTAGE_TOLERANCE_SECONDS": 20, "MAX_IDLE_SECONDS": 1}
    state.reset()
    fake = FakeTime()
    stop = FakeStop(fake)
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))
    monkeypatch.setattr(loop, "_open_listener", lambda name, channel: (None, False))
    real_ride_out = outage.ride_out
    monkeypatch.setattr(outage, "ride_out", lambda name, exc, stop_, **kw: real_ride_out(
        name, exc, stop_, probe=lambda: None, clock=fake.clock, **kw))
    calls = []

    def flapping():
        # Two outages of 15 s each (under the tolerance), separated by one good pass: both are
        # ridden out, because the good pass started the second one's budget afresh.
        calls.append(1)
        if len(calls) in (9, 18):
            return {"claimed": 0}
        if len(calls) > 18:
            stop.set()
            return {"claimed": 0}
        fake.now += 15 / 8
        raise OperationalError("server closed the connection unexpectedly")

    stats = loop.run_loop(name="work", run_once=flapping, channel="durable_work_due",
                          seconds_until_due=lambda: -1.0, stop=stop)
    assert stats.passes == 3
    assert state.snapshot()["work"]["outages"] == 4
    state.reset()


def test_loop__listens_again_when_the_listener_could_not_be_opened(transactional_db,
                                                                  monkeypatch):
    state.reset()
    real = pooler.connection_params
    opened = []

    def params():
        opened.append(1)
        if len(opened) == 1:  # the first listener meets a refusal (a full or starting server)
            return {**real(), "port": 9}
        return real()

    monkeypatch.setattr(pooler, "connection_params", params)
    seen = []

    def idle_pass():
        seen.append(state.snapshot()["schedule"]["notify_ok"])
        return {"claimed": 0}

    loop.run_loop(name="schedule", run_once=idle_pass, channel="durable_schedule_due",
                  seconds_until_due=lambda: -1.0, stop=loop.StopFlag(), max_passes=3)
    assert seen == [False, True, True]
    assert state.snapshot()["schedule"]["notify_fallbacks"] == 1
    state.reset()


def test_loop__a_pooler_that_does_not_deliver_is_not_asked_again(transactional_db,
                                                                 monkeypatch):
    state.reset()
    monkeypatch.setattr(pooler, "notify_works", lambda conn: False)  # as through PgBouncer
    opened = []
    real = loop._open_listener
    monkeypatch.setattr(loop, "_open_listener", lambda *a: opened.append(1) or real(*a))
    loop.run_loop(name="schedule", run_once=lambda: {"claimed": 0},
                  channel="durable_schedule_due", seconds_until_due=lambda: -1.0,
                  stop=loop.StopFlag(), max_passes=4)
    assert len(opened) == 1  # no 3 s self-test before every idle wait
    assert state.snapshot()["schedule"]["notify_ok"] is False
    state.reset()


def test_outage__a_sqlstate_less_internal_error_is_a_cut_connection_as_for_the_retry():
    # Seen through PgBouncer when the server connection behind a client died mid-COMMIT: the
    # retry treats it as a cut connection (runner/retry.py); a loop whose retries all met it
    # exited with DS405 instead of riding the outage out.
    from django.db import InternalError

    from tests.runner.test_retry_policy import django_error

    surprise = InternalError("received 2 results from command 'COMMIT'")
    assert retry.is_transient(surprise)
    assert outage.is_connection_loss(surprise)
    wrapped = RetriesExhausted("x")
    wrapped.__cause__ = surprise
    assert outage.is_connection_loss(wrapped)
    assert not outage.is_connection_loss(django_error(InternalError, "XX000"))  # the server's
