"""Issue 12 item 3: the health dashboard (the runners' admin page): live and dead runners,
backlog and lag per queue, due Work per name, suspended schedules with their one-action fix,
last hour's throughput; scoped like every admin page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from durable_schedule.observability.heartbeat import Heartbeat
from tests.admin.conftest import _user, seed_schedule

pytestmark = pytest.mark.django_db
URL = "/admin/durable_schedule/runnerheartbeat/"


def test_dashboard__url_and_no_row_pages():
    assert reverse("admin:durable_schedule_runnerheartbeat_changelist") == URL
    from django.urls import NoReverseMatch

    with pytest.raises(NoReverseMatch):
        reverse("admin:durable_schedule_runnerheartbeat_add")


def test_dashboard__shows_runners_queues_and_the_fix_of_each_suspension(client, superuser,
                                                                         clock):
    Heartbeat("work", lease_owner="web-1:42", interval=3600).write()
    dead = Heartbeat("schedule", lease_owner="old-1:7", interval=3600)
    dead.write()
    clock.set(clock.now + timedelta(minutes=5))
    Heartbeat("schedule", lease_owner="new-1:8", interval=3600).write()
    epoch = seed_schedule("tenant-a", "after-restore", state="suspended",
                          reason="runtime_epoch_mismatch")
    jumped = seed_schedule("tenant-b", "jumped", state="suspended", reason="clock_jump")
    client.force_login(superuser)
    page = client.get(URL)
    assert page.status_code == 200
    body = page.content.decode()
    assert 'class="runner-dead"><td>schedule</td><td>dead</td><td>old-1:7' in body
    assert 'class="runner-live"><td>schedule</td><td>live</td><td>new-1:8' in body
    assert "is dead: no heartbeat for" in body
    assert "<td>all queues</td><td>work</td>" in body
    assert "<td>schedules</td><td>schedule</td>" in body
    release = reverse("admin:durable_schedule_scheduledefinition_operate", args=["release"])
    assert f'href="{release}?ids={epoch["pk"]}&amp;scope=tenant-a' in body
    assert "Release after recovery…" in body
    # clock_jump: the fix is a new generation, offered as the admin's re-issue operation.
    reissue = reverse("admin:durable_schedule_scheduledefinition_operate", args=["reissue"])
    assert f'href="{reissue}?ids={jumped["pk"]}&amp;scope=tenant-b' in body
    assert "Re-issue as a new generation…" in body
    assert "No Work finished in the last hour." in body


def test_dashboard__a_scoped_user_sees_only_suspensions_of_their_scopes(client, scoped_users,
                                                                         django_user_model,
                                                                         clock):
    seed_schedule("tenant-a", "mine", state="suspended", reason="clock_jump")
    seed_schedule("tenant-b", "theirs", state="suspended", reason="clock_jump")
    user = _user(django_user_model, "alice", codenames=("view_runnerheartbeat",))
    scoped_users["alice"] = ["tenant-a"]
    client.force_login(user)
    body = client.get(URL).content.decode()
    assert "<td>mine</td>" in body and "theirs" not in body  # no detail link: no view perm
    assert "Due Work per Work name" not in body  # cross-scope totals need every scope


def test_dashboard__needs_the_view_permission(client, django_user_model, clock):
    client.force_login(_user(django_user_model, "nobody"))
    assert client.get(URL).status_code == 403


def test_dashboard__a_scoped_user_sees_only_their_schedules_held_by_an_unlisted_queue(
        client, scoped_users, django_user_model, clock, settings):
    from demo import schedule_targets

    from durable_schedule import schedules

    for scope, name in (("tenant-a", "mine"), ("tenant-b", "theirs")):
        schedules.create(scope, name, schedules.Every(timedelta(hours=1)),
                         schedule_targets.report.target(payload={}, queue="emails"))
    settings.DURABLE_SCHEDULE = {**settings.DURABLE_SCHEDULE, "QUEUES": ["reports"]}
    user = _user(django_user_model, "alice", codenames=("view_runnerheartbeat",))
    scoped_users["alice"] = ["tenant-a"]
    client.force_login(user)
    body = client.get(URL).content.decode()
    assert "schedule tenant-a/mine targets queue &#x27;emails&#x27;" in body
    assert "theirs" not in body and "tenant-b" not in body


def test_dashboard__a_scoped_user_sees_only_their_cron_schedules_with_changed_tz_rules(
        client, scoped_users, django_user_model, clock, tmp_path):
    from datetime import UTC, datetime

    from demo import schedule_targets

    from durable_schedule import schedules
    from durable_schedule.evaluation.cron import zones
    from tests.evaluation.cron.tzif import write_tzif
    from tests.schedules.test_cron import BERLIN_EARLY

    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    for scope, name in (("tenant-a", "mine"), ("tenant-b", "theirs")):
        schedules.create(scope, name, schedules.Cron("0 12 * * *", "Europe/Berlin"),
                         schedule_targets.report.target(payload={}))
    user = _user(django_user_model, "alice", codenames=("view_runnerheartbeat",))
    scoped_users["alice"] = ["tenant-a"]
    client.force_login(user)
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        body = client.get(URL).content.decode()
    assert "cron schedule tenant-a/mine has changed tz rules" in body
    assert "theirs" not in body and "tenant-b" not in body
