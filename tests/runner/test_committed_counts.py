"""What a pass committed before it raised is counted: a cut connection (or a failover) in the
middle of a ``process_work --loop --concurrency 3`` pass made the pass fail after some of its
outcome groups had committed, and the loop's stop summary said "nothing done" (the heartbeat's
counts and passes likewise) although those items had succeeded. Committed work is a fact: it is
carried into the next pass that completes, or into the totals when the loop ends first. Work
whose outcome did not commit is never counted.

The outage is real: the runner's sessions are terminated while new sessions of the database are
read-only (a demoted primary), so every retry of the pass fails until the test lets writes in
again; the loop rides the outage out and goes on.
"""

from __future__ import annotations

import io
import re
import signal
import threading
from collections import Counter

import psycopg
import pytest
from demo import runner_targets
from django.db import OperationalError, connection, connections

from durable_schedule.errors import InvalidArgument
from durable_schedule.observability import logs, runner_hooks
from durable_schedule.runner import committed, retry, service
from durable_schedule.runner.loop import StopFlag, run_loop
from durable_schedule.work.passes import process_work_pass
from tests.conftest import database_url
from tests.runner.loophelpers import sql, start_loop, wait_until

APP = "ds-fix-committed-counts"


def _succeeded() -> int:
    return sql("select count(*) from durable_work where state = 'succeeded'")[0][0]


def _summary_counts(line: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line.split(":", 1)[1])}


@pytest.mark.django_db(transaction=True)
@pytest.mark.crash
def test_loop__a_pass_cut_after_committing_outcomes_still_counts_them():
    for n in range(45):  # about 4.5 s of executors at concurrency 3: the cut comes mid-pass
        runner_targets.slow.enqueue(scope="tenant-a", command=f"c-{n}",
                                    idempotency_key=f"k-{n}", payload={"seconds": 0.3})
    proc = start_loop("process_work", "--concurrency", "3", "--batch", "3",
                      env={"PGAPPNAME": APP, "DURABLE_MAX_IDLE_SECONDS": "1"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    name = connection.settings_dict["NAME"]
    owner = psycopg.connect(database_url(), autocommit=True,
                            options="-c default_transaction_read_only=off")
    try:
        wait_until(lambda: _succeeded() >= 6, timeout=60, what="some items to succeed")
        # The failover: every session of the runner is cut, and a new one can only read.
        owner.execute(f"alter database {name} set default_transaction_read_only = on")
        owner.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                      " where application_name = %s", (APP,))
        wait_until(lambda: any("connection lost" in line for line in lines), timeout=60,
                   what="the loop to ride out the outage")
        owner.execute(f"alter database {name} reset default_transaction_read_only")
        wait_until(lambda: any("connection restored" in line for line in lines), timeout=60,
                   what="the loop to reconnect")
        before = _succeeded()
        wait_until(lambda: _succeeded() > before, timeout=60, what="a pass after the outage")
    finally:
        owner.execute(f"alter database {name} reset default_transaction_read_only")
        owner.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        reader.join(timeout=10)
    out = "".join(lines)
    assert code == 0, out
    # The cut pass was the first one and had committed some outcome groups: no pass completed
    # before the outage, so every count of the summary that predates it came from that pass.
    lost = next(i for i, line in enumerate(lines) if "connection lost" in line)
    first_pass = next(i for i, line in enumerate(lines) if re.search(r"work pass \d+", line))
    assert first_pass > lost, out
    [summary] = [line for line in lines if "runner stopped after" in line]
    counts = _summary_counts(summary)
    # Exactly what committed: the cut pass's committed groups included, the items whose outcome
    # the cut lost (still leased in the store) not.
    assert counts.get("succeeded", 0) == _succeeded(), out
    assert _succeeded() >= 6


class _FakeHooks:
    def __init__(self) -> None:
        self.seen: list[dict] = []

    def after_pass(self, counts):
        self.seen.append(dict(counts))
        return counts


def _cut_after(counts: dict[str, int]):
    exc = OperationalError("server closed the connection unexpectedly")
    committed.note(exc, counts)
    return exc


def test_loop__committed_counts_of_retried_attempts_join_the_next_pass(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))
    monkeypatch.setattr("durable_schedule.runner.loop._open_listener",
                        lambda name, channel: (None, False))
    calls = []

    def run_once():
        calls.append(1)
        if len(calls) == 1:  # committed 2 outcomes, then the connection was cut
            raise _cut_after({"claimed": 3, "admitted": 3, "succeeded": 2})
        return {"claimed": 1, "admitted": 1, "succeeded": 1}

    seen: list[dict] = []
    stats = run_loop(name="work", run_once=run_once, channel="durable_work_due",
                     seconds_until_due=lambda: None, stop=StopFlag(), max_passes=1,
                     after_pass=seen.append)
    assert stats.passes == 1
    assert stats.totals == {"claimed": 4, "admitted": 4, "succeeded": 3}
    assert seen == [{"claimed": 4, "admitted": 4, "succeeded": 3}]
    assert logs.stop_summary("work", stats) == (
        "work runner stopped after 1 passes (0 busy): admitted=4 claimed=4 succeeded=3")


def test_loop__an_error_that_ends_the_loop_keeps_the_committed_counts(monkeypatch):
    monkeypatch.setattr("durable_schedule.runner.loop._open_listener",
                        lambda name, channel: (None, False))
    passes = []

    def run_once():
        passes.append(1)
        if len(passes) == 1:
            return {"claimed": 2, "succeeded": 2}
        exc = PermissionError("not a database error")  # not transient: ends the loop
        committed.note(exc, {"claimed": 1, "succeeded": 1})
        raise exc

    seen: list[dict] = []
    with pytest.raises(PermissionError) as caught:
        run_loop(name="work", run_once=run_once, channel="durable_work_due",
                 seconds_until_due=lambda: -1.0, stop=StopFlag(), after_pass=seen.append)
    stats = committed.loop_stats_of(caught.value)
    assert stats is not None and stats.passes == 2
    assert stats.totals == {"claimed": 3, "succeeded": 3}
    assert seen == [{"claimed": 2, "succeeded": 2}, {"claimed": 1, "succeeded": 1}]
    assert logs.stop_summary("work", stats, failed=True) == (
        "work runner failed after 2 passes (1 busy): claimed=3 succeeded=3")


@pytest.mark.django_db(transaction=True)
def test_heartbeat__records_what_the_cut_attempt_committed(committed_clock, monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))
    monkeypatch.setattr("durable_schedule.runner.loop._open_listener",
                        lambda name, channel: (None, False))
    calls = []

    def run_once(stop):
        calls.append(1)
        if len(calls) == 1:
            raise _cut_after({"claimed": 2, "succeeded": 2})
        return {"claimed": 0, "succeeded": 0}

    stats = service.serve("work", run_once, stop=StopFlag(), max_passes=1,
                          install_signals=False, lease_owner="fix-committed")
    assert stats.totals == {"claimed": 2, "succeeded": 2}
    [(passes, counts)] = sql("select passes, last_counts from durable_runner_heartbeat"
                             " where lease_owner = 'fix-committed'")
    assert passes == 1
    assert (counts["claimed"], counts["succeeded"]) == (2, 2)
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_work_pass__notes_the_outcomes_it_committed_before_it_raised(committed_clock,
                                                                     monkeypatch):
    """The real pass: the second group commit fails for good; the first group's outcomes
    committed and are noted, the second group's are not."""
    from durable_schedule.work import pipeline

    for n in range(4):
        runner_targets.slow.enqueue(scope="tenant-a", command=f"c-{n}",
                                    idempotency_key=f"k-{n}", payload={"seconds": 0})
    real = pipeline.record_outcomes
    commits = Counter()

    def record(results, opts):
        commits["calls"] += 1
        if commits["calls"] > 1:
            raise PermissionError("the store refused the second group")
        return real(results, opts)

    monkeypatch.setattr("durable_schedule.work.passes.record_outcomes", record)
    with pytest.raises(PermissionError) as caught:
        process_work_pass(batch=2, max_items=4)
    noted = committed.of(caught.value)
    assert noted["succeeded"] == _succeeded() == 2
    assert noted["claimed"] == 4


@pytest.mark.django_db(transaction=True)
def test_metrics__count_the_outcomes_a_failed_pass_committed(committed_clock, monkeypatch):
    from durable_schedule.observability import metrics
    from durable_schedule.work import pipeline

    def succeeded_metric() -> float:
        return metrics.REGISTRY.get_sample_value("durable_schedule_work_outcomes_total",
                                                 {"outcome": "succeeded"}) or 0.0

    for n in range(4):
        runner_targets.slow.enqueue(scope="tenant-a", command=f"c-{n}",
                                    idempotency_key=f"k-{n}", payload={"seconds": 0})
    real = pipeline.record_outcomes
    commits = Counter()

    def record(results, opts):
        commits["calls"] += 1
        if commits["calls"] > 1:
            raise PermissionError("the store refused the second group")
        return real(results, opts)

    monkeypatch.setattr("durable_schedule.work.passes.record_outcomes", record)
    before = succeeded_metric()
    with pytest.raises(PermissionError):
        process_work_pass(batch=2, max_items=4)
    assert succeeded_metric() - before == _succeeded() == 2


@pytest.mark.django_db(transaction=True)
def test_work_once__the_command_prints_what_committed_before_it_failed(committed_clock,
                                                                       monkeypatch):
    from django.core.management import CommandError, call_command

    from durable_schedule.work import pipeline

    for n in range(4):
        runner_targets.slow.enqueue(scope="tenant-a", command=f"c-{n}",
                                    idempotency_key=f"k-{n}", payload={"seconds": 0})
    real = pipeline.record_outcomes
    commits = Counter()

    def record(results, opts):
        commits["calls"] += 1
        if commits["calls"] > 1:
            raise InvalidArgument("the store refused the second group")
        return real(results, opts)

    monkeypatch.setattr("durable_schedule.work.passes.record_outcomes", record)
    out = io.StringIO()
    with pytest.raises(CommandError, match="refused the second group"):
        call_command("process_work", "--batch", "2", "--max-items", "4", stdout=out)
    assert _succeeded() == 2
    counts = dict(re.findall(r"(\w+)=(\d+)", out.getvalue()))
    assert (counts["claimed"], counts["succeeded"]) == ("4", "2"), out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_heartbeat_message__names_a_sub_second_interval(committed_clock, settings, caplog):
    settings.DURABLE_SCHEDULE = {"HEARTBEAT_SECONDS": 0.2}
    with caplog.at_level("INFO", logger="durable_schedule.runner"):
        hooks = runner_hooks.start("work", lease_owner="fix-heartbeat-message")
        hooks.stop()
    [message] = [r.getMessage() for r in caplog.records if "registered" in r.getMessage()]
    assert message.endswith("(heartbeat every 0.2s)"), message
    connections.close_all()


def test_heartbeat_message__interval_text():
    assert runner_hooks.seconds_text(0.2) == "0.2"
    assert runner_hooks.seconds_text(0.05) == "0.05"
    assert runner_hooks.seconds_text(10.0) == "10"
    assert runner_hooks.seconds_text(2.25) == "2.25"
    assert runner_hooks.seconds_text(999.5) == "999.5"
    assert runner_hooks.seconds_text(3600.0) == "3600"
