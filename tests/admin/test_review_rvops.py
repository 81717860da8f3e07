"""Review rvops: crafted change list actions, the admin's permission and scope boundaries, and
what the operator pages show. Each test states the documented contract (docs/admin.md)."""

from __future__ import annotations

import pytest

from durable_schedule.store.models import ScheduleDefinition, Work
from tests.admin.test_pages import changelist

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("model", "action"), [("scheduledefinition", "suspend_selected"),
                                               ("work", "cancel_selected_work")])
@pytest.mark.parametrize("selected", [["abc"], ["1", "x1"], ["-1"], ["9" * 30], ["1.0"]])
def test_action__a_selected_row_id_that_is_not_one_is_a_bad_request(client, superuser,
                                                                    two_scopes, model, action,
                                                                    selected):
    """docs/admin.md "How every operation runs": row ids that are not positive numbers are
    refused whole with a 400 (DS406) -- also when they come from the change list's checkboxes
    (Django passed them to ``pk__in`` as posted: a ValueError, a server error)."""
    client.force_login(superuser)
    before = (list(ScheduleDefinition.objects.values_list("revision", flat=True)),
              list(Work.objects.values_list("state", flat=True)))
    response = client.post(changelist(model), {"action": action, "index": 0,
                                               "_selected_action": selected})
    assert response.status_code == 400
    assert (list(ScheduleDefinition.objects.values_list("revision", flat=True)),
            list(Work.objects.values_list("state", flat=True))) == before


def _page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def schedules_only(db, django_user_model):
    """Staff who may view schedules and occurrences, not Work, generations or history."""
    from tests.admin.conftest import _user

    return _user(django_user_model, "schedules-only",
                 codenames=("view_scheduledefinition", "view_occurrence"))


@pytest.fixture
def work_only(db, django_user_model):
    from tests.admin.conftest import _user

    return _user(django_user_model, "work-only", codenames=("view_work", "view_workpermit"))


def test_links__a_page_links_only_to_pages_its_user_may_open(client, schedules_only, work_only,
                                                             superuser, scoped_users,
                                                             two_scopes):
    """Django's own rule, and the dashboard's (docs/admin.md "Health dashboard"): never a link
    that answers 403. The schedule page of a user without the Work, generation and history
    view permissions names them without linking; the same for the occurrence list's Work
    column and the Work page's schedule."""
    from django.urls import reverse

    scoped_users["schedules-only"] = ["tenant-a"]
    scoped_users["work-only"] = ["tenant-a"]
    rows = two_scopes["tenant-a"]
    schedule_page = reverse("admin:durable_schedule_scheduledefinition_change",
                            args=[rows["schedule"]["pk"]])
    work_page = reverse("admin:durable_schedule_work_change", args=[rows["work"]["pk"]])
    work_url = reverse("admin:durable_schedule_work_change", args=[rows["work"]["pk"]])
    generation_urls = "/admin/durable_schedule/schedulegeneration/"
    history_url = reverse("admin:durable_schedule_schedulehistory_changelist")
    schedule_url = schedule_page

    client.force_login(schedules_only)
    page = _page(client, schedule_page)
    assert str(rows["work"]["work_id"]) in page  # named, not linked
    assert f'href="{work_url}' not in page
    assert f'href="{generation_urls}' not in page
    assert f'href="{history_url}' not in page
    listing = _page(client, changelist("occurrence"))
    assert str(rows["work"]["work_id"]) in listing and f'href="{work_url}' not in listing
    assert client.get(work_url).status_code == 403  # the link would have answered this

    client.force_login(work_only)
    page = _page(client, work_page)
    assert "nightly-a" in page and f'href="{schedule_url}' not in page
    assert f'href="{work_url}' in _page(client, changelist("workpermit"))  # may open it

    client.force_login(superuser)  # who may open them gets the links
    page = _page(client, schedule_page)
    assert f'href="{work_url}' in page and f'href="{generation_urls}' in page
    assert f'href="{history_url}' in page
    assert f'href="{schedule_url}' in _page(client, work_page)
    assert f'href="{work_url}' in _page(client, changelist("occurrence"))


def test_work_page__offers_proof_only_when_a_permit_awaits_it(client, superuser, clock):
    """docs/admin.md: the detail page never offers an action the API would refuse. Work
    suspended before any admission (``unknown_definition``, no permit) has no effect to prove:
    ``work.record_proof`` refuses it, so *Record proof…* is not offered; *Resume…* is."""
    from django.db import connection
    from django.urls import reverse

    from tests.admin.conftest import seed_work

    undeployed = seed_work("tenant-a", state="suspended", permits=())
    uncertain = seed_work("tenant-a", state="suspended", permits=(None,))
    with connection.cursor() as cur:
        cur.execute("update durable_work set suspension_reason = 'unknown_definition' "
                    "where id = %s", [undeployed["pk"]])
    client.force_login(superuser)

    def offered(work) -> list[str]:
        page = client.get(reverse("admin:durable_schedule_work_change", args=[work["pk"]]))
        return [op["name"] for op in page.context["operations"]]

    assert "proof" not in offered(undeployed)
    assert "resume_work" in offered(undeployed)
    assert "proof" in offered(uncertain)


def seed_generation_with_payload(payload: str) -> int:
    from django.db import connection

    from tests.admin.conftest import seed_schedule

    seed_schedule("tenant-a", "big")
    with connection.cursor() as cur:
        cur.execute("""insert into durable_schedule_generation (scope_id, schedule_id, generation,
                       kind, spec, accepted_at_utc, target, overlap_policy, misfire_policy,
                       safety_window, evaluator_version, created_by)
                   select scope_id, schedule_id, 2, kind, spec, accepted_at_utc,
                          jsonb_build_object('payload', %s::text), overlap_policy,
                          misfire_policy, safety_window, evaluator_version, created_by
                     from durable_schedule_generation where schedule_id = 'big'
                   returning id""", [payload])
        return cur.fetchone()[0]


def test_huge_payloads__lists_do_not_read_them_and_pages_show_a_bounded_part(client, superuser,
                                                                              clock):
    """A Work payload may be 32 MiB (the Work cap): the Work list read every row's payload,
    result and error for columns it never shows (fifty such rows are 1.6 GB in one request),
    and the Work page printed the whole payload into the HTML. Lists now leave those columns
    unread; pages show the first part of a large value and say how large it is."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from tests.admin.conftest import seed_work

    big = "x" * 3_000_000
    work = seed_work("tenant-a", state="suspended", permits=(None,))
    with connection.cursor() as cur:
        cur.execute("update durable_work set payload = jsonb_build_object('blob', %s::text), "
                    "last_error = jsonb_build_object('message', %s::text) where id = %s",
                    [big, big, work["pk"]])
        cur.execute("update durable_work_quarantine set result = to_jsonb(%s::text)", [big])
    generation_pk = seed_generation_with_payload(big)
    client.force_login(superuser)
    from durable_schedule.store.models import WorkQuarantine

    big_columns = ('"durable_work"."payload"', '"durable_work"."result"',
                   '"durable_work"."last_error"', '"durable_work_quarantine"."result"')
    big_columns += ('"durable_schedule_generation"."target"',)
    for name in ("work", "workquarantine", "schedulegeneration"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(changelist(name)).status_code == 200
            listed = client.get(changelist(name)).content.decode()
            assert (str(work["work_id"]) if name != "schedulegeneration" else "big") in listed
        read = [sql for sql in (q["sql"] for q in queries.captured_queries)
                if any(column in sql for column in big_columns)]
        assert not read, read
    page = client.get(reverse("admin:durable_schedule_work_change", args=[work["pk"]]))
    assert page.status_code == 200
    html = page.content.decode()
    assert len(html) < 500_000
    assert "3000012 bytes" in html  # the payload's size, said where it is cut
    for name, pk in (("workquarantine", WorkQuarantine.objects.get().pk),
                     ("schedulegeneration", generation_pk)):
        page = client.get(reverse(f"admin:durable_schedule_{name}_change", args=[pk]))
        assert page.status_code == 200
        assert len(page.content) < 100_000 and "bytes of JSON in all" in page.content.decode()


def test_huge_payloads__an_operation_page_does_not_read_them(client, superuser, clock):
    """The confirmation page of an operation lists up to 100 Work rows: not their payloads."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from tests.admin.conftest import seed_work

    work = seed_work("tenant-a", state="suspended", permits=(None,))
    client.force_login(superuser)
    url = reverse("admin:durable_schedule_work_operate", args=["cancel_work"])
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"{url}?ids={work['pk']}").status_code == 200
    assert not [q["sql"] for q in queries.captured_queries
                if '"durable_work"."payload"' in q["sql"]]


@pytest.mark.django_db(transaction=True)
def test_atomic_requests__rows_already_handled_stay_handled(client, committed_clock,
                                                            monkeypatch):
    """docs/admin.md "How every operation runs", 5: an error that is not a DurableError fails
    the request, and rows already handled stay handled, each API call committing on its own.
    Under ATOMIC_REQUESTS the whole request was one transaction, so the failure rolled back
    the rows the messages had not even reported yet: the operation view is not atomic."""
    from django.contrib.auth import get_user_model
    from django.db import connections

    from durable_schedule import schedules
    from tests.admin.test_actions import token_from
    from tests.admin.test_lifecycle_actions import make, operate_url

    # In place, and put back after the test (monkeypatch): the connection reads its own dict.
    monkeypatch.setitem(connections["default"].settings_dict, "ATOMIC_REQUESTS", True)
    first, second = make("first"), make("second")
    user = get_user_model().objects.create_superuser("root", "root@x.test", "pw")
    client.force_login(user)
    real = schedules.suspend

    def suspend(scope, schedule_id, *args, **kwargs):
        if schedule_id == "second":
            raise RuntimeError("the database went away")  # not a DurableError
        return real(scope, schedule_id, *args, **kwargs)

    monkeypatch.setattr(schedules, "suspend", suspend)
    client.raise_request_exception = False
    url = operate_url("suspend", first, second)
    page = client.get(url)
    form = {"csrfmiddlewaretoken": token_from(page), "ids": f"{first},{second}",
            "reason": "outage"}
    for row in page.context["rows"]:
        form[f"revision-{row.pk}"] = str(row.revision)
    assert client.post(url, form).status_code == 500
    states = dict(ScheduleDefinition.objects.values_list("schedule_id", "state"))
    assert states == {"first": "suspended", "second": "active"}


@pytest.mark.parametrize(("state", "reason"), [("suspended", "clock_jump"),
                                               ("suspended", "operator"), ("paused", None)])
def test_detail_page__lateness_only_for_an_active_schedule(client, superuser, clock, state,
                                                          reason):
    """docs/admin.md: lateness is shown only for active schedules; a suspended or paused one
    waits for an operator ("lateness —" in the table of states). The list said so, the detail
    page still printed "(late by 4 h)" for them."""
    from django.db import connection
    from django.urls import reverse

    from tests.admin.conftest import seed_schedule

    late = seed_schedule("tenant-a", "late")  # next due T0 - 4 h, the clock at T0
    waiting = seed_schedule("tenant-a", "waiting", state="suspended" if reason else "active",
                            reason=reason)
    if state == "paused":
        with connection.cursor() as cur:
            cur.execute("update durable_schedule_definition set state = 'paused', paused_at = "
                        "created_at, paused_by = 'root', pause_note = 'n' where id = %s",
                        [waiting["pk"]])
    client.force_login(superuser)

    def next_due_cell(pk) -> str:
        html = client.get(reverse("admin:durable_schedule_scheduledefinition_change",
                                  args=[pk])).content.decode()
        return html.split('id="timeline-next-due">')[1].split("</td>")[0]

    assert "late by 4 h" in next_due_cell(late["pk"])
    assert "late by" not in next_due_cell(waiting["pk"])


def test_dashboard__a_scoped_user_sees_only_their_tz_rules_problems_read_bounded(
        client, viewer, scoped_users, clock, tmp_path, monkeypatch):
    """docs/admin.md "Health dashboard": a user who sees only some scopes gets only their
    schedules with changed tz rules; docs/operations.md: every read of the dashboard is
    bounded (5 s by default), the re-read of the tz inventory for such a user included (it ran
    without a bound: a lock on a store table held the page for as long as the lock)."""
    from datetime import UTC, datetime

    from demo import schedule_targets
    from django.contrib.auth.models import Permission
    from django.urls import reverse

    from durable_schedule import schedules
    from durable_schedule.evaluation.cron import zones
    from durable_schedule.operations import probe, tz_rules
    from tests.evaluation.cron.tzif import write_tzif
    from tests.schedules.test_cron import BERLIN_EARLY

    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    target = schedule_targets.report.target(payload={"report": "noon"})
    for scope in ("tenant-a", "tenant-b"):
        schedules.create(scope, "noon", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    viewer.user_permissions.add(Permission.objects.get(codename="view_runnerheartbeat"))
    scoped_users["viewer"] = ["tenant-a"]
    reads = []
    real = tz_rules.collect

    def spy(*args, **kwargs):
        reads.append(kwargs.get("timeout"))
        return real(*args, **kwargs)

    monkeypatch.setattr(tz_rules, "collect", spy)
    client.force_login(viewer)
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        body = client.get(reverse("admin:durable_schedule_runnerheartbeat_changelist")) \
            .content.decode()
    assert "cron schedule tenant-a/noon has changed tz rules" in body
    assert "tenant-b" not in body
    assert reads and all(t == probe.DEFAULT_TIMEOUT_SECONDS for t in reads), reads


def test_work_page__a_small_payload_reads_whole_and_as_written(client, superuser, clock):
    """Below the cut, the Work page shows the payload whole, non-ASCII text as it is (as
    Django's own JSON display did)."""
    from django.db import connection
    from django.urls import reverse

    from tests.admin.conftest import seed_work

    work = seed_work("tenant-a", state="pending")
    with connection.cursor() as cur:
        cur.execute("""update durable_work set payload = '{"name": "Zoë <b>", "n": 1}'::jsonb
                       where id = %s""", [work["pk"]])
    client.force_login(superuser)
    html = client.get(reverse("admin:durable_schedule_work_change",
                              args=[work["pk"]])).content.decode()
    assert "{&quot;n&quot;: 1, &quot;name&quot;: &quot;Zoë &lt;b&gt;&quot;}" in html
    assert "bytes of JSON in all" not in html
