"""Issue 6: an operator's round trip in a real browser — headless Chromium (Debian's package)
driven by Playwright for Python against pytest-django's live server: log in, suspend a schedule,
release one after recovery, record a proof on suspended Work; pause, run now, resume and
re-issue a suspended schedule as a new generation (issue 14).

Chromium comes from ``scripts/install_browser.sh`` (``make browser``; .ci/run runs it);
Playwright's own browser download is never used. Without a chromium binary the test skips and
says how to enable it, or fails under DURABLE_REQUIRE_BROWSER=1
(tests/admin/browser_requirement.py).
Screenshots go to the test's tmp dir; with ``DURABLE_DOCS_SCREENSHOTS=1`` also to docs/img/
(the pictures in docs/admin.md).
"""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections

from durable_schedule.store.models import ScheduleDefinition, ScheduleHistory, Work, WorkPermit
from tests.admin.browser_requirement import ENABLE, skip_or_fail
from tests.admin.conftest import T0, seed_occurrence, seed_schedule, seed_work

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = os.environ.get("DURABLE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.fixture
def page(live_server, monkeypatch):
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        skip_or_fail(f"no chromium binary at {CHROMIUM}: to run this test, {ENABLE}")
    try:
        from playwright import sync_api
    except ImportError:
        skip_or_fail("Playwright for Python is missing: pip install -e '.[test]'")
    # Playwright's sync API runs an event loop in this thread; the test's own ORM reads
    # between browser steps are plain synchronous reads, which Django would otherwise refuse.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1600, "height": 900})
        tab = context.new_page()
        tab.set_default_timeout(20_000)
        try:
            yield tab
        finally:
            context.close()
            browser.close()
            # The test's ORM reads while Playwright's loop ran used a connection of their own
            # context; close it here, in that context, or it outlives the test database.
            connections.close_all()


def screenshot(tab, name: str, tmp_path: Path) -> None:
    target = tmp_path / name
    tab.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000, "the screenshot shows a rendered page"
    if os.environ.get("DURABLE_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, DOCS_IMG / name)


def seed_story() -> dict:
    """Two tenants: a healthy hourly report, one suspended by a runtime-epoch fence (with
    occurrences and their Work, one of them suspended with an unresolved permit)."""
    rows = {
        "report": seed_schedule("tenant-7", "nightly-report",
                                accepted_at=T0 - timedelta(minutes=150))["pk"],
        "fenced": seed_schedule("tenant-7", "invoice-run", state="suspended",
                                reason="runtime_epoch_mismatch", generations=2,
                                accepted_at=T0 - timedelta(hours=6),
                                cursor=T0 - timedelta(hours=3))["pk"],
        "other": seed_schedule("tenant-9", "cleanup")["pk"],
    }
    for hours, state in ((5, "succeeded"), (4, "suspended"), (3, None)):
        occurrence = seed_occurrence("tenant-7", "invoice-run", T0 - timedelta(hours=hours),
                                     generation=2)
        if state == "succeeded":
            seed_work("tenant-7", state="succeeded", occurrence=occurrence, permits=("succeeded",))
        elif state == "suspended":
            rows["work"] = seed_work("tenant-7", state="suspended", occurrence=occurrence,
                                     permits=("failed", None), closed_reason="deadline")
    return rows


def messages(tab) -> list[str]:
    return tab.locator("ul.messagelist li").all_inner_texts()


def test_operator__suspends_releases_and_records_proof_in_a_browser(
        committed_clock, django_user_model, live_server, page, tmp_path):
    # ``page`` comes last: the browser is stopped before the clock is restored, so no database
    # work runs inside Playwright's event loop after the test body.
    rows = seed_story()
    django_user_model.objects.create_superuser("ops", "ops@example.test", "s3cret-pw")
    admin = live_server.url + "/admin/"

    # Log in through the login form.
    page.goto(admin + "durable_schedule/scheduledefinition/")
    assert "/admin/login/" in page.url
    page.fill("#id_username", "ops")
    page.fill("#id_password", "s3cret-pw")
    page.click("input[type=submit]")
    page.wait_for_url("**/scheduledefinition/")
    table = page.locator("#result_list")
    assert table.locator("tr", has_text="nightly-report").count() == 1
    assert "runtime_epoch_mismatch" in table.inner_text()
    screenshot(page, "admin-schedule-list.png", tmp_path)

    # Suspend through the change list action and its confirmation page.
    page.check(f"input[name=_selected_action][value='{rows['report']}']")
    page.select_option("select[name=action]", "suspend_selected")
    page.click("button[name=index]")
    page.wait_for_url("**/operate/suspend/**")
    page.fill("#id_reason", "provider maintenance window")
    page.click("#operation-submit")
    page.wait_for_url("**/scheduledefinition/")
    assert any("nightly-report: suspended" in m for m in messages(page)), messages(page)
    report = ScheduleDefinition.objects.get(pk=rows["report"])
    assert report.state == "suspended" and report.suspension_reason == "operator"

    # Release the fenced schedule from its detail page (the timeline is shown there).
    page.goto(admin + f"durable_schedule/scheduledefinition/{rows['fenced']}/change/")
    assert page.locator("#generations tr.generation").count() == 2
    assert page.locator("#occurrences tr.occurrence").count() == 3
    assert page.locator("#timeline-state").inner_text() == "suspended"
    screenshot(page, "admin-schedule-detail.png", tmp_path)
    page.click("#operation-release")
    page.wait_for_url("**/operate/release/**")
    page.click("#operation-submit")
    page.wait_for_url(f"**/scheduledefinition/{rows['fenced']}/change/**")
    assert any("invoice-run: released" in m for m in messages(page)), messages(page)
    assert page.locator("#timeline-state").inner_text() == "active"
    assert ScheduleDefinition.objects.get(pk=rows["fenced"]).state == "active"

    # Record an Applied proof on the suspended Work: the page names the permit it resolves.
    work = rows["work"]
    page.goto(admin + f"durable_schedule/work/{work['pk']}/change/")
    page.click("#operation-proof")
    page.wait_for_url("**/operate/proof/**")
    assert "permit #2" in page.locator("#operation-rows").inner_text()
    screenshot(page, "admin-proof-confirm.png", tmp_path)
    page.check("input[name=outcome][value=applied]")
    page.click("#operation-submit")
    page.wait_for_url(f"**/work/{work['pk']}/change/**")
    assert any(str(work["work_id"]) in m and "refused" not in m for m in messages(page)), \
        messages(page)
    permit = WorkPermit.objects.get(work_id=work["work_id"], permit_no=2)
    assert permit.outcome == "applied" and permit.resolved_by == "ops"
    assert Work.objects.get(pk=work["pk"]).state != "suspended"

    # Every operation is in history with the operator as actor.
    actors = set(ScheduleHistory.objects.filter(scope_id="tenant-7").exclude(event="created")
                 .values_list("event", "actor"))
    assert actors == {("suspended", "ops"), ("released", "ops")}


def test_operator__pauses_runs_now_resumes_and_repairs_in_a_browser(
        committed_clock, django_user_model, live_server, page, tmp_path):
    """Issue 14: pause, run now, resume and the repair of a suspension from the detail page,
    each through its confirmation page (``page`` last, as above)."""
    from demo import schedule_targets

    from durable_schedule import schedules

    schedules.create("tenant-8", "hourly-sync", schedules.Every(timedelta(hours=1)),
                     schedule_targets.report.target(payload={"report": "sync"}))
    pk = ScheduleDefinition.objects.get(scope_id="tenant-8", schedule_id="hourly-sync").pk
    django_user_model.objects.create_superuser("ops", "ops@example.test", "s3cret-pw")
    detail = live_server.url + f"/admin/durable_schedule/scheduledefinition/{pk}/change/"
    page.goto(detail)
    page.fill("#id_username", "ops")
    page.fill("#id_password", "s3cret-pw")
    page.click("input[type=submit]")
    page.wait_for_url(f"**/scheduledefinition/{pk}/change/**")

    def operate(name: str, fill=None) -> list[str]:
        page.click(f"#operation-{name}")
        page.wait_for_url(f"**/operate/{name}/**")
        if fill:
            fill()
        page.click("#operation-submit")
        page.wait_for_url(f"**/scheduledefinition/{pk}/change/**")
        return messages(page)

    done = operate("pause", lambda: page.fill("#id_note", "provider maintenance"))
    assert any("hourly-sync: paused" in m for m in done), done
    assert page.locator("#timeline-state").inner_text() == "paused"
    assert page.locator("#operation-resume").count() == 1
    assert page.locator("#operation-pause").count() == 0

    done = operate("trigger")
    assert any("hourly-sync: running now" in m for m in done), done
    assert Work.objects.filter(scope_id="tenant-8").count() == 1

    done = operate("resume", lambda: page.check("input[name=catch_up][value=skip]"))
    assert any("hourly-sync: resumed" in m for m in done), done
    assert ScheduleDefinition.objects.get(pk=pk).state == "active"

    # A suspension whose fix is a new generation: the page offers exactly that, never release.
    schedules.suspend("tenant-8", "hourly-sync", "bad deploy", actor="ops")
    page.goto(detail)
    assert page.locator("#operation-release").count() == 0
    page.click("#operation-reissue")
    page.wait_for_url("**/operate/reissue/**")
    previews = page.locator("#operation-previews").inner_text()
    assert "every 1 h" in previews and "UTC" in previews
    screenshot(page, "admin-reissue-confirm.png", tmp_path)
    page.click("#operation-submit")
    page.wait_for_url(f"**/scheduledefinition/{pk}/change/**")
    assert any("re-issued as generation 2, now active" in m for m in messages(page)), \
        messages(page)

    events = list(ScheduleHistory.objects.filter(scope_id="tenant-8", actor="ops")
                  .order_by("id").values_list("event", flat=True))
    assert events == ["paused", "triggered", "resumed", "suspended", "updated"]
