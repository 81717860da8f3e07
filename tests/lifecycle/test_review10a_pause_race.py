"""The admin's bulk pause racing real processor passes: two ``process_schedules`` processes
claim due schedules while an operator pauses all of them from the change list. Whatever the
interleaving, every schedule ends paused with its dispatch row disarmed, at most the one due
instant was run, later passes run nothing, and resume keeps the grid."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from durable_schedule import schedules
from durable_schedule.store.models import ScheduleDefinition
from tests.admin.conftest import _user
from tests.admin.test_actions import revisions_from, token_from
from tests.schedules import processes
from tests.schedules.conftest import MINUTE, SCOPE, SECOND, T0, TEN, rows, run_pass

pytestmark = pytest.mark.django_db(transaction=True)
COUNT = 60


def test_bulk_pause__racing_two_processor_processes_leaves_every_schedule_paused(
        committed_clock, target, django_user_model):
    csrf_client = Client(enforce_csrf_checks=True)
    with transaction.atomic():
        for i in range(COUNT):
            schedules.create(SCOPE, f"race-{i:03d}", schedules.Every(TEN, anchor=T0), target)
    committed_clock.set(T0 + TEN + SECOND)  # each schedule has exactly one due instant
    csrf_client.force_login(_user(django_user_model, "root", superuser=True))
    pks = sorted(ScheduleDefinition.objects.filter(scope_id=SCOPE).values_list("pk", flat=True))
    url = ("/admin/durable_schedule/scheduledefinition/operate/pause/?ids="
           + ",".join(map(str, pks)))
    page = csrf_client.get(url)
    assert page.status_code == 200
    # Three schedules per pass: the racers are still claiming while the operator's post runs
    # (it is sent once the first racer reports its first pass; a read, not a sleep).
    racers = [processes.start("--max-schedules", "3", "--claim-batch", "1",
                              "--passes", "40", "--lease-owner", f"racer-{n}")
              for n in range(2)]
    first = racers[0].stdout.readline()
    assert first.startswith("pass "), first
    response = csrf_client.post(url, {"csrfmiddlewaretoken": token_from(page),
                                      "ids": ",".join(map(str, pks)), "note": "freeze",
                                      **revisions_from(page)},
                                follow=True)
    outputs = [p.communicate(timeout=300) for p in racers]
    for proc, (_, err) in zip(racers, outputs, strict=True):
        assert proc.returncode == 0, err
    assert response.status_code == 200
    messages = [str(m) for m in response.context["messages"]]
    assert len(messages) == COUNT and all(": paused (revision" in m for m in messages), \
        [m for m in messages if ": paused (revision" not in m][:3]
    assert rows("select state, count(*) from durable_schedule_definition group by state") == [
        ("paused", COUNT)]
    assert rows("select count(*) from durable_schedule_dispatch where due_at is not null") == [
        (0,)]
    # The one due instant ran at most once per schedule, and nothing later.
    assert rows("select count(*) from durable_schedule_occurrence"
                " where first_nominal_utc <> %s or kind <> 'nominal'", (T0 + TEN,)) == [(0,)]
    [(ran, schedules_run)] = rows("select count(*), count(distinct schedule_id)"
                                  " from durable_schedule_occurrence")
    assert ran == schedules_run  # whichever ran, ran once (how many depends on the timing)
    assert run_pass(committed_clock, T0 + 5 * TEN).claimed == 0
    info = schedules.resume(SCOPE, "race-000", catch_up="skip", actor="root")
    assert info.next_nominal_utc == T0 + 6 * TEN  # the grid of the anchor, not the resume time
    assert info.next_nominal_utc - T0 == 60 * MINUTE
