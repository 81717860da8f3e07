"""Fixtures of the admin tests: store rows seeded as the owner, and users with and without the
operator permissions.

Rows are seeded with SQL as the owner (a superuser in development, which bypasses RLS), inside
the test's transaction, like tests/store/seed.py: the pages only read, and the operations under
test call the public API on those rows, which checks them as it would any other. One test in
test_actions.py runs the whole path on a schedule that ``schedules.create`` made.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import connection

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
HOUR_US = 3_600_000_000

VIEW_CODENAMES = (
    "view_scheduledefinition", "view_schedulegeneration", "view_occurrence",
    "view_scheduledispatch", "view_schedulehistory", "view_scope", "view_work",
    "view_workpermit", "view_workquarantine", "view_workhistory", "view_workdispatch",
)
OPERATOR_CODENAMES = ("suspend_schedule", "release_schedule", "delete_schedule",
                      "record_work_proof")

#: Scopes per username for the tests' ADMIN_SCOPES callable (see ``scoped_users``).
USER_SCOPES: dict[str, object] = {}


def scopes_by_username(user):
    """The ADMIN_SCOPES callable of the tests: USER_SCOPES, else the default rule."""
    from durable_schedule.admin.scoping import superusers_see_all

    if user.get_username() in USER_SCOPES:
        return USER_SCOPES[user.get_username()]
    return superusers_see_all(user)


@pytest.fixture
def scoped_users(settings):
    """Use ``scopes_by_username`` as ADMIN_SCOPES; tests fill USER_SCOPES."""
    settings.DURABLE_SCHEDULE = {"ADMIN_SCOPES": "tests.admin.conftest.scopes_by_username"}
    USER_SCOPES.clear()
    yield USER_SCOPES
    USER_SCOPES.clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Test users only: PBKDF2 would spend most of each test hashing passwords."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def seed_schedule(scope: str, schedule_id: str, *, state: str = "active",
                  reason: str | None = None, accepted_at: datetime = T0 - timedelta(hours=5),
                  cursor: datetime | None = None, interval_us: int = HOUR_US,
                  generations: int = 1, runtime_epoch: int = 1) -> dict:
    """A schedule with ``generations`` Every generations, a dispatch row and a history row.

    Returns the definition's primary key and the scope's routing id.
    """
    cursor = cursor or accepted_at
    with connection.cursor() as cur:
        cur.execute("insert into durable_schedule_scope (scope_id) values (%s) "
                    "on conflict (scope_id) do nothing", [scope])
        cur.execute("select routing_id from durable_schedule_scope where scope_id = %s", [scope])
        routing_id = cur.fetchone()[0]
        evidence = '{"seeded": true}' if reason else None
        cur.execute(
            """insert into durable_schedule_definition (scope_id, schedule_id, state,
                   active_generation, runtime_epoch, scope_generation, cursor_utc,
                   suspension_reason, suspension_evidence, suspended_at, created_at, updated_at)
               values (%s, %s, %s, %s, %s, 1, %s, %s, %s, %s, %s, %s) returning id""",
            [scope, schedule_id, state, generations, runtime_epoch, cursor, reason, evidence,
             accepted_at if reason else None, accepted_at, accepted_at],
        )
        pk = cur.fetchone()[0]
        for generation in range(1, generations + 1):
            cur.execute(
                """insert into durable_schedule_generation (scope_id, schedule_id, generation,
                       kind, spec, accepted_at_utc, target, overlap_policy, misfire_policy,
                       safety_window, evaluator_version, created_by)
                   values (%s, %s, %s, 'every', %s, %s, %s, 'queue_one', 'run_once',
                           interval '1 hour', 'ds-eval-v1', 'seed')""",
                [scope, schedule_id, generation,
                 f'{{"interval_us": {interval_us}, "anchor": null}}',
                 accepted_at - timedelta(hours=generations - generation),
                 f'{{"work_name": "demo.report", "work_version": "v{generation}"}}'],
            )
        cur.execute(
            """insert into durable_schedule_dispatch (scope_routing_id, schedule_id, due_at)
               values (%s, %s, %s)""",
            [routing_id, schedule_id, cursor + timedelta(microseconds=interval_us)],
        )
        cur.execute(
            """insert into durable_schedule_history (scope_id, schedule_id, generation, event,
                   actor, recorded_at) values (%s, %s, 1, 'created', 'seed', %s)""",
            [scope, schedule_id, accepted_at],
        )
    return {"pk": pk, "routing_id": routing_id}


def seed_occurrence(scope: str, schedule_id: str, nominal: datetime, *, state="materialized",
                    generation: int = 1, kind: str = "nominal") -> int:
    with connection.cursor() as cur:
        cur.execute(
            """insert into durable_schedule_occurrence (scope_id, schedule_id, generation, kind,
                   first_nominal_utc, last_nominal_utc, state, created_at, updated_at)
               values (%s, %s, %s, %s, %s, %s, %s, %s, %s) returning id""",
            [scope, schedule_id, generation, kind, nominal, nominal, state, nominal, nominal],
        )
        return cur.fetchone()[0]


def seed_work(scope: str, *, state: str = "pending", command: str | None = None,
              occurrence: int | None = None, schedule_id: str | None = None,
              permits: tuple[str | None, ...] = (), attempt: int | None = None,
              closed_reason: str | None = None) -> dict:
    """A Work row; ``permits`` lists each permit's outcome (None = unresolved admitted)."""
    work_id = uuid.uuid4()
    command = command or f"cmd-{work_id.hex[:8]}"
    attempt = len(permits) if attempt is None else attempt
    with connection.cursor() as cur:
        cur.execute("insert into durable_schedule_scope (scope_id) values (%s) "
                    "on conflict (scope_id) do nothing", [scope])
        cur.execute(
            """insert into durable_work (scope_id, work_id, command_id, idempotency_key,
                   work_name, work_version, payload, provider_safety, fingerprint_schema,
                   fingerprint_digest, retry_policy, execution_deadline, accepted_at, due_at,
                   state, attempt, suspension_reason, execution_admission_closed_at,
                   execution_admission_closed_reason, source_occurrence_id, updated_at)
               values (%s, %s, %s, %s, 'demo.report', 'v1', '{}', 'reconcile_before_retry',
                       'v1', 'x', '{}', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               returning id""",
            [scope, work_id, command, f"key-{command}", T0 + timedelta(hours=1),
             T0 - timedelta(hours=1), T0, state, attempt,
             "ambiguous_permit" if state == "suspended" else None,
             T0 if closed_reason else None, closed_reason, occurrence, T0],
        )
        pk = cur.fetchone()[0]
        cur.execute(
            """insert into durable_work_dispatch (scope_routing_id, work_ref, due_at)
               select routing_id, %s, %s from durable_schedule_scope where scope_id = %s""",
            [pk, T0, scope],
        )
        for number, outcome in enumerate(permits, start=1):
            cur.execute(
                """insert into durable_work_permit (scope_id, work_id, permit_no, attempt,
                       lease_generation, admitted_at, outcome, resolved_at, resolved_by,
                       resolution_source)
                   values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
                [scope, work_id, number, number, number, T0 - timedelta(minutes=60 - number),
                 outcome, T0 if outcome else None, "executor" if outcome else None,
                 "executor" if outcome else None],
            )
        cur.execute(
            """insert into durable_work_quarantine (scope_id, work_id, attempt, lease_owner,
                   lease_generation, reason, result, recorded_at)
               values (%s, %s, 1, 'worker-1', 1, 'late_result', '{"late": true}', %s)""",
            [scope, work_id, T0],
        )
        cur.execute(
            """insert into durable_work_history (scope_id, work_id, event, actor, detail,
                   recorded_at) values (%s, %s, 'accepted', '', '{}', %s)""",
            [scope, work_id, T0 - timedelta(hours=1)],
        )
        if occurrence is not None:
            cur.execute(
                """update durable_schedule_occurrence set work_id = %s, work_command = %s,
                       work_idempotency_key = %s where id = %s""",
                [work_id, command, f"key-{command}", occurrence],
            )
    return {"pk": pk, "work_id": work_id}


@pytest.fixture
def two_scopes(clock):
    """Scopes tenant-a and tenant-b, each with one schedule, an occurrence and its Work."""
    rows = {}
    for scope, schedule_id in (("tenant-a", "nightly-a"), ("tenant-b", "nightly-b")):
        schedule = seed_schedule(scope, schedule_id)
        occurrence = seed_occurrence(scope, schedule_id, T0 - timedelta(hours=4))
        work = seed_work(scope, state="suspended", occurrence=occurrence,
                         schedule_id=schedule_id, permits=("succeeded", None))
        rows[scope] = {"schedule": schedule, "occurrence": occurrence, "work": work}
    return rows


def _user(django_user_model, username, *, superuser=False, staff=True, codenames=()):
    if superuser:
        user = django_user_model.objects.create_superuser(username, f"{username}@x.test", "pw")
    else:
        user = django_user_model.objects.create_user(username, f"{username}@x.test", "pw",
                                                     is_staff=staff)
        user.user_permissions.set(Permission.objects.filter(
            content_type__app_label="durable_schedule", codename__in=codenames))
    return user


@pytest.fixture
def csrf_client():
    """A test client that enforces CSRF checks like a browser session does."""
    from django.test import Client

    return Client(enforce_csrf_checks=True)


@pytest.fixture
def superuser(db, django_user_model):
    return _user(django_user_model, "root", superuser=True)


@pytest.fixture
def viewer(db, django_user_model):
    """Staff with every view permission and no operator permission."""
    return _user(django_user_model, "viewer", codenames=VIEW_CODENAMES)


@pytest.fixture
def operator(db, django_user_model):
    """Staff with view and every operator permission."""
    return _user(django_user_model, "operator", codenames=VIEW_CODENAMES + OPERATOR_CODENAMES)
