"""Run by ``manage.py shell -c`` in a fresh process (tests/lifecycle/test_autodiscovery.py): an
operator re-issues, pauses, resumes and triggers schedule tenant-a/auto from the admin, as a
plain web process would serve it -- nothing here imports a ``work`` module or calls
``work.autodiscover()``. Prints one line per operation: its name and the admin's messages."""

import re

from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import setup_test_environment
from django.urls import reverse

from durable_schedule.store.models import ScheduleDefinition

setup_test_environment()  # response.context, for the messages
operator = User.objects.create_superuser("ops", "ops@example.com", "unused")
client = Client()
client.force_login(operator)
pk = ScheduleDefinition.objects.get(scope_id="tenant-a", schedule_id="auto").pk


def operate(operation, **data):
    url = reverse("admin:durable_schedule_scheduledefinition_operate", args=[operation])
    url += f"?ids={pk}"
    page = client.get(url)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content).group(1)
    revision = ScheduleDefinition.objects.get(pk=pk).revision
    done = client.post(url, {"csrfmiddlewaretoken": token.decode(), "ids": str(pk),
                             f"revision-{pk}": str(revision), **data}, follow=True)
    print(operation, [str(m) for m in done.context["messages"]])


operate("reissue")
operate("pause", note="maintenance")
operate("resume", catch_up="skip")
operate("trigger", request_id="run-now-1")
