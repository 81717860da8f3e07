"""The Prometheus scrape endpoint (docs/operations.md "Metrics").

Include it in the project's urls::

    from durable_schedule.observability.views import metrics
    urlpatterns += [path("durable/metrics", metrics)]

The page reveals queue sizes, runner hosts and pids: it must not be public. The view admits a
request that carries ``Authorization: Bearer <DURABLE_SCHEDULE["METRICS_TOKEN"]>`` (Prometheus'
``authorization`` scrape setting) or comes from an active staff user who holds
``durable_schedule.view_runnerheartbeat`` -- the permission that opens the admin's health
dashboard, which shows the same runner hosts, pids and queue totals; anything else is a 403, so
an include without a token configured serves those users only. Restrict it at the network as
well.
"""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from durable_schedule import conf
from durable_schedule.errors import MetricsUnavailable
from durable_schedule.observability import metrics as _metrics

#: What a logged-in user needs (with is_staff) to read the page: the health dashboard's
#: permission (docs/operations.md "Metrics").
METRICS_PERMISSION = "durable_schedule.view_runnerheartbeat"


def _allowed(request: HttpRequest) -> bool:
    token = conf.metrics_token()
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(
            header[len("Bearer "):].encode(), token.encode()):
        return True
    user = getattr(request, "user", None)
    # Staff alone is not enough: a staff user granted only, say, the schedules' pages must not
    # read the runners' hosts and pids here when the health dashboard refuses them.
    return bool(user is not None and user.is_active and user.is_staff
                and user.has_perm(METRICS_PERMISSION))


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Process metrics of this (web) process plus the store gauges, read now."""
    if not _allowed(request):
        return HttpResponseForbidden("durable_schedule metrics: bearer token, or a staff "
                                     "login with the runners view permission "
                                     f"({METRICS_PERMISSION}), required\n",
                                     content_type="text/plain")
    try:
        body, content_type = _metrics.exposition(include_store=True)
    except MetricsUnavailable as exc:
        return HttpResponse(f"{exc}\n", status=501, content_type="text/plain")
    return HttpResponse(body, content_type=content_type)
