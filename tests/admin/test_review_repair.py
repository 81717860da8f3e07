"""Adversarial review of the admin's repair actions (issue 14 item 2): every suspension reason
the processor records has its one documented fix on the detail page, and the fix works."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from demo import schedule_targets
from django.urls import reverse

from durable_schedule import schedules
from durable_schedule.errors import TriggerSlotBusy
from durable_schedule.evaluation.cron import zones
from durable_schedule.store.models import ScheduleDefinition
from tests.admin.test_actions import confirm, messages_of
from tests.evaluation.cron.tzif import write_tzif
from tests.schedules.conftest import SCOPE, T0, TEN, definition, run_pass, set_work_state, works
from tests.schedules.test_cron import BERLIN_EARLY

pytestmark = pytest.mark.django_db
CHANGE = "admin:durable_schedule_scheduledefinition_change"


def test_a_tz_rules_suspension_is_repaired_by_the_offered_reissue(csrf_client, superuser,
                                                                  clock, tmp_path):
    """A cron generation whose time-zone rules changed is suspended ``tz_rules_changed``; its
    documented fix is a new generation bound to the rules in force (``update``), so the
    detail page offers *Re-issue as a new generation…* -- not nothing, and not a release."""
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    target = schedule_targets.report.target(payload={"report": "noon"})
    schedules.create(SCOPE, "noon", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="noon").pk
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        run_pass(clock, datetime(2030, 1, 1, 11, 0, 1, tzinfo=UTC))
        assert definition("noon")["suspension_reason"] == "tz_rules_changed"
        csrf_client.force_login(superuser)
        page = csrf_client.get(reverse(CHANGE, args=[pk]))
        ops = [op["name"] for op in page.context["operations"]]
        assert [op for op in ops if op in ("release", "reissue")] == ["reissue"]
        [message] = messages_of(confirm(csrf_client, "reissue", pk))
        assert "re-issued as generation 2, now active" in message
        run_pass(clock, datetime(2030, 1, 1, 11, 0, 2, tzinfo=UTC))
        assert definition("noon")["state"] == "active"  # bound to the current rules now


def offered(client, pk) -> list[str]:
    return [op["name"] for op in client.get(reverse(CHANGE, args=[pk])).context["operations"]]


@pytest.mark.parametrize("overlap", ["queue_one", "skip", "buffer_all"])
def test_run_now_is_not_offered_while_the_api_would_refuse_it(client, superuser, clock,
                                                              overlap):
    """*Run now* while the slot is held (or, for buffer_all, while buffered instants wait; for
    queue_one, while the pending coalesced occurrence does) is refused with DS150, so the
    detail page does not offer it then; it comes back as soon as the API would accept it."""
    target = schedule_targets.report.target(payload={"report": "r"})
    schedules.create(SCOPE, "r", schedules.Every(TEN), target, overlap=overlap)
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="r").pk
    client.force_login(superuser)
    assert "trigger" in offered(client, pk)
    run_pass(clock, T0 + TEN)  # 12:10 runs and holds the slot
    assert "trigger" not in offered(client, pk)
    run_pass(clock, T0 + 2 * TEN)  # buffer_all: 12:20 waits behind it; queue_one: coalesced
    [(work_id, _, *_)] = works()
    set_work_state(work_id, "succeeded")
    if overlap in ("buffer_all", "queue_one"):  # the slot is free, but 12:20 runs first
        assert "trigger" not in offered(client, pk)
        with pytest.raises(TriggerSlotBusy):  # as the API says
            schedules.trigger(SCOPE, "r", "now-1")
        run_pass(clock, T0 + 2 * TEN + TEN // 2)
        set_work_state(works()[-1][0], "succeeded")
    assert "trigger" in offered(client, pk)


def test_run_now_stays_offered_under_allow_all_while_work_runs(client, superuser, clock):
    target = schedule_targets.report.target(payload={"report": "r"})
    schedules.create(SCOPE, "r", schedules.Every(TEN), target, overlap="allow_all")
    pk = ScheduleDefinition.objects.get(scope_id=SCOPE, schedule_id="r").pk
    run_pass(clock, T0 + TEN)
    client.force_login(superuser)
    assert "trigger" in offered(client, pk)
    assert schedules.trigger(SCOPE, "r", "now-1").created  # and the API accepts it


def unreadable_suspended(tamper: bool) -> int:
    from django.db import connection

    from tests.admin.conftest import seed_schedule

    seeded = seed_schedule(SCOPE, "broken", state="suspended", reason="unevaluable")
    if tamper:
        with connection.cursor() as cur:  # as the owner: the generation trigger refuses UPDATE
            cur.execute("alter table durable_schedule_generation disable trigger user")
            cur.execute("update durable_schedule_generation set spec = '{\"interval_us\": -1}'"
                        " where scope_id = %s and schedule_id = 'broken'", [SCOPE])
            cur.execute("alter table durable_schedule_generation enable trigger user")
    return seeded["pk"]


@pytest.mark.parametrize("tamper", [True, False])
def test_reissue_is_not_offered_for_a_stored_spec_that_cannot_be_read(client, superuser, clock,
                                                                      tamper):
    """An unevaluable row whose stored spec cannot be read back is repaired only by
    ``update(spec=...)`` from code: the re-issue without changes is refused (DS114), so the
    detail page says so and does not offer it (docs/admin.md); with a readable spec it does."""
    pk = unreadable_suspended(tamper)
    client.force_login(superuser)
    page = client.get(reverse(CHANGE, args=[pk]))
    ops = [op["name"] for op in page.context["operations"]]
    assert ("reissue" in ops) is not tamper
    if tamper:
        assert "cannot be evaluated" in page.content.decode()


def test_reissue_preview_shows_no_instant_before_start_at(csrf_client, superuser, clock):
    """The re-issue page shows what the new generation will schedule; with a ``start_at``
    still ahead, no instant before it exists (the new cursor starts just before it)."""
    from tests.admin.test_actions import operate_url
    from tests.admin.test_lifecycle_actions import make, suspend_for

    pk = make("s", start_at=T0 + 6 * TEN)  # from 13:00 on
    suspend_for(pk, "operator")
    csrf_client.force_login(superuser)
    html = csrf_client.get(operate_url("reissue", pk)).content.decode()
    preview = html.split('id="operation-previews"')[1].split("</table>")[0]
    assert "2030-01-01 12:10:00 UTC" not in preview and "2030-01-01 13:00:00 UTC" in preview
    [message] = messages_of(confirm(csrf_client, "reissue", pk))
    assert "2030-01-01 13:00:00 UTC" in message  # the new generation's first due instant
