"""Issue 14 item 10 on the schedule detail page: each generation's spec, bounds and jitter read
as an operator reads them (the formatter of the schedule list and the re-issue page), never as
the stored JSON."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo import schedule_targets
from django.urls import reverse

from durable_schedule import schedules
from durable_schedule.store.models import ScheduleDefinition
from tests.schedules.conftest import SCOPE, T0

pytestmark = pytest.mark.django_db
CHANGE = "admin:durable_schedule_scheduledefinition_change"


def generation_cells(html: str, css: str) -> list[str]:
    """The text of every ``<td class="{css}">`` of the generations table, newest first."""
    table = html.split('id="generations"')[1].split("</table>")[0]
    return [cell.split("</td>")[0].strip() for cell in table.split(f'<td class="{css}">')[1:]]


def test_detail_page__generations_show_the_spec_and_bounds_in_words(client, superuser, clock):
    target = schedule_targets.report.target(payload={"report": "r"})
    info = schedules.create(SCOPE, "r", schedules.Every(timedelta(seconds=10)), target)
    schedules.update(SCOPE, "r", expected_revision=info.revision,
                     spec=schedules.Cron("30 2 * * *", tz="Europe/Berlin"),
                     start_at=T0 + timedelta(days=1), end_at=T0 + timedelta(days=31),
                     max_runs=5, jitter=timedelta(seconds=30), overlap="skip")
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="r").pk
    client.force_login(superuser)
    html = client.get(reverse(CHANGE, args=[pk])).content.decode()
    assert generation_cells(html, "generation-spec") == [
        "cron 30 2 * * * in Europe/Berlin", "every 10 s"]
    assert generation_cells(html, "generation-limits") == [
        "from 2030-01-02 12:00:00 UTC, until 2030-02-01 12:00:00 UTC, at most 5 runs, "
        "jitter up to 30 s", "—"]
    assert generation_cells(html, "generation-overlap") == ["skip / run_once",
                                                            "queue_one / run_once"]
    table = html.split('id="generations"')[1].split("</table>")[0]
    assert "1 h</td>" in table  # the safety window, in the same duration format
    # No stored spec JSON anywhere in the table (the list of fields of each kind's JSON).
    for raw in ("interval_us", "&quot;expression&quot;", "&quot;tz&quot;", '"expression"'):
        assert raw not in table


def test_detail_page__an_unreadable_spec_still_shows_its_raw_json(client, superuser, clock):
    """The one exception: a stored spec the evaluator cannot read back (the runner quarantines
    it) is shown as stored, so the operator sees what is wrong."""
    from tests.admin.conftest import seed_schedule

    seeded = seed_schedule("tenant-a", "broken")
    from django.db import connection

    with connection.cursor() as cur:  # as the owner: the generation trigger refuses UPDATE
        cur.execute("alter table durable_schedule_generation disable trigger user")
        cur.execute("update durable_schedule_generation set spec = '{\"interval_us\": -1}'"
                    " where scope_id = 'tenant-a' and schedule_id = 'broken'")
        cur.execute("alter table durable_schedule_generation enable trigger user")
    client.force_login(superuser)
    html = client.get(reverse(CHANGE, args=[seeded["pk"]])).content.decode()
    [cell] = generation_cells(html, "generation-spec")
    assert cell == "every: {&quot;interval_us&quot;: -1}"


def test_detail_page__a_buffer_all_generation_shows_its_bound(client, superuser, clock):
    target = schedule_targets.report.target(payload={"report": "b"})
    schedules.create(SCOPE, "b", schedules.Every(timedelta(minutes=10)), target,
                     overlap="buffer_all", buffer_limit=25)
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="b").pk
    client.force_login(superuser)
    html = client.get(reverse(CHANGE, args=[pk])).content.decode()
    assert generation_cells(html, "generation-overlap") == [
        "buffer_all (up to 25 waiting) / run_once"]
    assert '<td id="timeline-buffered">0 waiting (at most 25)</td>' in html


def test_detail_page__the_buffered_count_follows_the_passes(client, superuser, clock):
    from tests.schedules.conftest import run_pass

    target = schedule_targets.report.target(payload={"report": "b"})
    ten = timedelta(minutes=10)
    schedules.create(SCOPE, "b", schedules.Every(ten), target, overlap="buffer_all")
    for k in (1, 2, 3):  # 12:10 runs and keeps running; 12:20 and 12:30 wait
        run_pass(clock, T0 + k * ten)
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="b").pk
    client.force_login(superuser)
    html = client.get(reverse(CHANGE, args=[pk])).content.decode()
    assert '<td id="timeline-buffered">2 waiting (at most 100)</td>' in html
    queued = client.get(reverse(CHANGE, args=[make_queue_one()])).content.decode()
    assert "timeline-buffered" not in queued


def make_queue_one() -> int:
    target = schedule_targets.report.target(payload={"report": "q"})
    schedules.create(SCOPE, "q", schedules.Every(timedelta(minutes=10)), target)
    return ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="q").pk
