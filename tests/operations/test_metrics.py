"""Issue 12 item 4: Prometheus counters and histograms of a runner process, store gauges read
at scrape time, the protected Django view, durable_status --metrics, OpenTelemetry spans."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from durable_schedule import schedules
from durable_schedule.observability import metrics
from tests.conftest import T0
from tests.schedules.conftest import HOUR
from tests.schedules.conftest import run_pass as schedule_pass
from tests.work.conftest import run_pass as work_pass

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-0123456789"


def sample(name: str, **labels) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture(scope="module")
def spans():
    """An SDK tracer provider with an in-memory exporter (set once per process)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def test_schedule_pass__counts_occurrences_by_kind_decisions_and_durations(clock, target):
    before = {
        "nominal": sample("durable_schedule_occurrences_total", kind="nominal"),
        "decision": sample("durable_schedule_schedule_decisions_total", action="nominal"),
        "passes": sample("durable_schedule_pass_duration_seconds_count", queue="schedule"),
        "claims": sample("durable_schedule_claim_duration_seconds_count", queue="schedule"),
        "claimed": sample("durable_schedule_claimed_total", queue="schedule"),
    }
    for name in ("a", "b"):
        schedules.create("tenant-a", name, schedules.Every(HOUR), target)
    counts = schedule_pass(clock, T0 + HOUR + timedelta(seconds=1))
    assert counts.materialized == 2
    assert sample("durable_schedule_occurrences_total", kind="nominal") - before["nominal"] == 2
    assert sample("durable_schedule_schedule_decisions_total",
                  action="nominal") - before["decision"] == 2
    assert sample("durable_schedule_pass_duration_seconds_count",
                  queue="schedule") - before["passes"] == 1
    assert sample("durable_schedule_claim_duration_seconds_count",
                  queue="schedule") - before["claims"] >= 1
    assert sample("durable_schedule_claimed_total", queue="schedule") - before["claimed"] == 2


def test_schedule_pass__a_quarantine_counts_as_suspension_by_reason(clock, target):
    from tests.schedules.test_pass import tamper_generation

    suspended = sample("durable_schedule_suspensions_total", queue="schedule",
                       reason="unevaluable")
    quarantined = sample("durable_schedule_quarantines_total", queue="schedule")
    schedules.create("tenant-a", "broken", schedules.Every(HOUR), target)
    tamper_generation("broken")
    counts = schedule_pass(clock, T0 + HOUR + timedelta(seconds=1))
    assert counts.suspended == 1
    assert sample("durable_schedule_suspensions_total", queue="schedule",
                  reason="unevaluable") - suspended == 1
    assert sample("durable_schedule_quarantines_total", queue="schedule") - quarantined == 1


def test_work_pass__counts_outcomes_and_retries(clock, define):
    ok = define("metrics.ok")
    ok.executor(lambda ctx, payload: {"ok": True})
    flaky = define("metrics.flaky")

    @flaky.executor
    def fail(ctx, payload):
        raise RuntimeError("provider down")

    before = {k: sample("durable_schedule_work_outcomes_total", outcome=k)
              for k in ("succeeded", "retried")}
    retries = sample("durable_schedule_work_retries_total")
    ok.enqueue(scope="tenant-a", command="c-1", idempotency_key="k", payload={})
    flaky.enqueue(scope="tenant-a", command="c-2", idempotency_key="k", payload={})
    counts = work_pass()
    assert (counts.succeeded, counts.retried) == (1, 1)
    assert sample("durable_schedule_work_outcomes_total",
                  outcome="succeeded") - before["succeeded"] == 1
    assert sample("durable_schedule_work_outcomes_total",
                  outcome="retried") - before["retried"] == 1
    assert sample("durable_schedule_work_retries_total") - retries == 1


def test_exposition__store_gauges_are_read_from_the_database(clock, define):
    ok = define("metrics.gauge")
    ok.executor(lambda ctx, payload: {})
    ok.enqueue(scope="tenant-a", command="c-1", idempotency_key="k", payload={})
    clock.set(clock.now + timedelta(seconds=42))
    body, content_type = metrics.exposition()
    text = body.decode()
    assert content_type.startswith("text/plain")
    assert "durable_schedule_store_up 1.0" in text
    assert 'durable_schedule_backlog{queue="work"} 1.0' in text
    assert 'durable_schedule_oldest_due_lag_seconds{queue="work"} 42.0' in text
    assert 'durable_schedule_runners{kind="work",state="live"} 0.0' in text
    assert "durable_schedule_pass_duration_seconds_bucket" in text  # process metrics too


def metrics_reader(username):
    """Staff holding the permission the metrics view asks of a logged-in user."""
    from django.contrib.auth.models import Permission

    user = User.objects.create_user(username, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_runnerheartbeat"))
    return user


def test_view__refuses_anonymous_and_wrong_token_serves_staff_and_token(client, clock):
    url = "/durable/metrics"
    assert client.get(url).status_code == 403
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 403
    with override_settings(DURABLE_SCHEDULE={"METRICS_TOKEN": TOKEN}):
        assert client.get(url, HTTP_AUTHORIZATION="Bearer wrong-token-0123456").status_code \
            == 403
        page = client.get(url, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert page.status_code == 200
        assert b"durable_schedule_store_up 1.0" in page.content
    staff = metrics_reader("ops")
    client.force_login(staff)
    assert client.get(url).status_code == 200
    staff.is_staff = False
    staff.save()
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("bad", ["short", "0123456789abcde", 1234567890123456789])
def test_view__a_token_breaking_the_rule_admits_nobody_by_token(client, clock, bad):
    # The settings check refuses such a token (E005), but a process that never ran the checks
    # (a WSGI worker) used it: "Bearer short" was served. Fail closed: staff only.
    url = "/durable/metrics"
    with override_settings(DURABLE_SCHEDULE={"METRICS_TOKEN": bad}):
        assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {bad}").status_code == 403
        staff = metrics_reader("ops")
        client.force_login(staff)
        assert client.get(url).status_code == 200


def test_status_command__metrics_prints_the_exposition(clock):
    out = StringIO()
    call_command("durable_status", "--metrics", stdout=out)
    assert 'durable_schedule_expired_leases{queue="schedule"} 0.0' in out.getvalue()


def test_tracing__a_pass_and_an_attempt_are_spans_with_identities(clock, define, spans):
    spans.clear()
    ok = define("metrics.traced")
    ok.executor(lambda ctx, payload: {})
    accepted = ok.enqueue(scope="tenant-a", command="c-1", idempotency_key="k", payload={})
    work_pass()
    finished = {s.name: s for s in spans.get_finished_spans()}
    attempt = finished["durable_schedule.work.attempt"]
    assert attempt.attributes["durable.scope_id"] == "tenant-a"
    assert attempt.attributes["durable.work_id"] == str(accepted.work_id)
    assert attempt.attributes["durable.attempt"] == 1
    assert attempt.attributes["durable.outcome"] == "succeeded"
    pass_span = finished["durable_schedule.work.pass"]
    assert pass_span.attributes["durable.succeeded"] == 1
    assert attempt.parent.span_id == pass_span.context.span_id


def test_tracing__a_failed_attempt_span_has_error_status(clock, define, spans):
    spans.clear()
    flaky = define("metrics.traced_fail")

    @flaky.executor
    def fail(ctx, payload):
        raise ValueError("bad input")

    flaky.enqueue(scope="tenant-a", command="c-1", idempotency_key="k", payload={})
    work_pass()
    [attempt] = [s for s in spans.get_finished_spans()
                 if s.name == "durable_schedule.work.attempt"]
    assert attempt.status.status_code == trace.StatusCode.ERROR
    assert attempt.attributes["durable.outcome"] == "failed"


def test_without_prometheus_client__view_is_501_and_exposition_is_ds429(client, clock,
                                                                         monkeypatch):
    from durable_schedule.errors import MetricsUnavailable

    monkeypatch.setattr(metrics, "_prom", None)
    with pytest.raises(MetricsUnavailable) as err:
        metrics.exposition()
    assert err.value.code == "DS429"
    # Recording still works (a no-op): a pass never fails for want of the extra.
    assert metrics.observe_pass("work", {"claimed": 1}, 0.1) == {"claimed": 1}
    client.force_login(metrics_reader("ops2"))
    page = client.get("/durable/metrics")
    assert page.status_code == 501 and b"DS429" in page.content


def test_runner_metrics_port__serves_the_process_metrics():
    import socket
    import urllib.request

    with socket.socket() as probe:  # a free port on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics.serve_process_metrics(port)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    assert "durable_schedule_pass_duration_seconds" in text
    assert "durable_schedule_store_up" not in text  # store gauges are the view's


@pytest.mark.parametrize("provider", [trace.ProxyTracerProvider, trace.NoOpTracerProvider])
def test_tracing__without_an_sdk_provider_no_span_is_started(monkeypatch, provider):
    from durable_schedule.observability import tracing

    monkeypatch.setattr(trace, "get_tracer_provider", provider)
    with tracing.span("durable_schedule.work.pass", scope="s") as current:
        assert current is None
    traced = tracing.traced_attempt(lambda action: "ran")
    assert traced(object()) == "ran"


def test_tracing__an_sdk_provider_configured_later_is_used(monkeypatch):
    from durable_schedule.observability import tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    with tracing.span("durable_schedule.work.pass", scope="s") as current:
        assert current is not None
    assert [s.name for s in exporter.get_finished_spans()] == ["durable_schedule.work.pass"]
