from django.contrib import admin
from django.urls import path

from durable_schedule.observability.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    # Staff or a bearer token only (docs/operations.md "Metrics").
    path("durable/metrics", metrics, name="durable-metrics"),
]
