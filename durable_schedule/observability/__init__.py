"""Observability of the runners (docs/operations.md "Health", "Metrics", "Logging").

* :mod:`.heartbeat` — each ``--loop`` runner's row in ``durable_runner_heartbeat``;
* :mod:`.metrics`   — Prometheus counters and histograms of a runner process, and gauges read
  from the database at scrape time (optional extra ``metrics``: prometheus-client);
* :mod:`.tracing`   — OpenTelemetry spans for a pass and an attempt when ``opentelemetry-api`` is
  installed (no hard dependency);
* :mod:`.logs`      — the JSON log formatter and the one-line stop summary;
* :mod:`.views`     — the Django view that serves the metrics to a scraper.

The runtime calls into this package through a few decorators placed on the pass, claim and
attempt functions, so nothing here changes what a pass decides.
"""
