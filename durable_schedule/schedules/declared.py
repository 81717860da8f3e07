"""Schedules declared in code and ``manage.py sync_schedules`` (docs/schedules.md "Schedules
declared in code").

An app declares its periodic Work in ``<app>/schedules.py``, the way celery-beat users write
``CELERY_BEAT_SCHEDULE``::

    from durable_schedule import schedules
    from billing.work import report

    schedules.declare("nightly-report", schedules.Every(timedelta(days=1), anchor=MIDNIGHT),
                      target=report.target(payload={"kind": "nightly"}), scope="main")

``declare`` only records the declaration in this process. ``sync_schedules`` makes the store
match, through the public API (the same writer as every other caller):

* a declared identity that does not exist is created;
* one whose active generation differs (spec, target, overlap, misfire, safety window, bounds,
  jitter, buffer limit) gets a new
  generation through ``update`` -- an unchanged declaration is a no-op, so a deploy that changes
  nothing creates no generation and never re-anchors anything;
* a schedule that an earlier sync created or updated (one of its generations has the actor
  :data:`SYNC_ACTOR`, whoever wrote the active one since) and that no declaration names any
  more is reported, and deleted only with ``--prune``; schedules sync never wrote are never
  touched;
* ``--prune`` with no declaration at all is refused (DS159) unless ``--allow-empty``: it would
  delete every managed schedule in every scope, and is usually a discovery mistake;
* a declared identity that was deleted is reported as a conflict (DS158; deletion is terminal
  for an identity): rename the declaration;
* a declared identity that exists but that sync never wrote (made through the API or the admin)
  is reported as a conflict (DS157) and left untouched, unless ``--adopt``: then one new
  generation under the sync actor takes it over (a later ``--prune`` may delete it);
* a changed declaration of a schedule an operator suspended (reason ``operator``) is reported
  as held and not updated: ``update`` would lift the suspension, which only an operator does.

A conflict leaves its schedule untouched; the rest of the sync is applied and committed, and the
command exits non-zero. The sync actor is reserved (DS156): no other caller can make a schedule
look managed.

Everything happens in one transaction under a transaction-scoped advisory lock, so two deploy
hosts running it at once serialize: the second sees what the first committed and finds nothing
to do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from importlib import import_module
from typing import Any

from django.db import transaction
from django.utils.module_loading import module_has_submodule

from durable_schedule import conf
from durable_schedule.default_scope import resolve
from durable_schedule.errors import (
    DeclarationConflict,
    DeclaredIdentityDeleted,
    DeclaredScheduleNotManaged,
    DurableError,
    EmptyPruneRefused,
    InvalidArgument,
    ScheduleNeverFires,
    ScheduleNotFound,
)
from durable_schedule.evaluation.bounds import Bounds
from durable_schedule.evaluation.cron import calendar as cron_calendar
from durable_schedule.evaluation.cron.spec import Cron, with_seed
from durable_schedule.evaluation.timeline import ScheduleSpec, kind_of, spec_to_json
from durable_schedule.schedules import api
from durable_schedule.schedules import validation as check
from durable_schedule.schedules.info import ScheduleInfo
from durable_schedule.store.sqlfiles import query
from durable_schedule.store.transactions import (
    connection,
    routed,
    scoped,
    validate_scope_id,
)
from durable_schedule.work.target import WorkTarget

#: The actor of every generation sync_schedules writes: how it recognises what it manages.
#: Reserved: every schedule call refuses it (DS156) to every caller but sync
#: (schedules/validation.py ``actor``).
SYNC_ACTOR = check.RESERVED_ACTOR
_QUERIES = "declared_queries.sql"
#: Key of the transaction-scoped advisory lock that serializes concurrent syncs.
SYNC_LOCK_KEY = 0x64735F73796E63  # "ds_sync"


@dataclass(frozen=True)
class Declaration:
    scope: str
    schedule_id: str
    spec: ScheduleSpec
    target: WorkTarget
    overlap: str = "queue_one"
    misfire: str = "run_once"
    safety_window: timedelta | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_runs: int | None = None
    jitter: timedelta | None = None
    #: buffer_all's bound, resolved (100 when not given); None for the other policies.
    buffer_limit: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.scope, self.schedule_id)


_DECLARED: dict[tuple[str, str], Declaration] = {}
_LOCK = threading.Lock()


def declare(schedule_id: str, spec: ScheduleSpec, *, target: WorkTarget,
            scope: str | None = None, overlap: str = "queue_one", misfire: str = "run_once",
            safety_window: timedelta | None = None, start_at: datetime | None = None,
            end_at: datetime | None = None, max_runs: int | None = None,
            jitter: timedelta | None = None, buffer_limit: int | None = None) -> Declaration:
    """Declare a schedule in code (recorded in this process; ``sync_schedules`` applies it).

    Validated at once, like ``create``: a bad spec, policy or target fails at import time, not
    at deploy time. Declaring one identity twice with different values is refused (DS145):
    one identity has one declaration. ``scope`` left out (or None) is
    ``DURABLE_SCHEDULE['DEFAULT_SCOPE']``, as for every other schedule call (DS410 without one).
    """
    scope = resolve(scope, "schedules.declare")
    bounds = Bounds(start_at=start_at, end_at=end_at, max_runs=max_runs)
    check.policies(overlap, misfire)
    scope, schedule_id = validate_scope_id(scope), check.schedule_id(schedule_id)
    spec = check.spec(spec)
    if isinstance(spec, Cron) and not cron_calendar.matches_some_day(
            with_seed(spec, scope, schedule_id).pattern):
        # create() refuses it whenever it runs (DS117); a declaration must fail at import time,
        # not in the deploy's sync.
        raise ScheduleNeverFires("the cron expression matches no day of the calendar: the "
                                 "schedule would never fire", expression=spec.expression,
                                 scope=scope, schedule_id=schedule_id)
    target_json = check.target(target, scope)
    # create()'s own jitter check, target included: a jitter on a target with an attempt plan
    # (DS149) must fail here, at import time, not in the deploy's sync.
    # No database at import time: a Cron's gaps are read from the process clock here, and
    # sync_schedules checks them again on the database clock (create / update).
    jitter = api._jitter(jitter, spec, target_json, (scope, schedule_id), None)
    decl = Declaration(
        scope=scope, schedule_id=schedule_id,
        spec=spec, target=target, overlap=overlap, misfire=misfire,
        safety_window=safety_window, start_at=bounds.start_at, end_at=bounds.end_at,
        max_runs=bounds.max_runs, jitter=jitter,
        buffer_limit=check.buffer_limit(overlap, buffer_limit))
    check.safety_window(safety_window)
    with _LOCK:
        existing = _DECLARED.get(decl.key)
        if existing is not None and not _same(existing, decl):
            raise DeclarationConflict("this schedule is declared twice with different values",
                                      scope=decl.scope, schedule_id=decl.schedule_id)
        _DECLARED[decl.key] = decl
    return decl


def _same(a: Declaration, b: Declaration) -> bool:
    """Two declarations of one identity say the same thing: equal, and their payloads equal as
    ``jsonb`` keeps them (Python's ``1 == True == 1.0`` holds, ``jsonb``'s does not)."""
    return a == b and _normal(a.target.to_json()) == _normal(b.target.to_json())


def declarations() -> list[Declaration]:
    with _LOCK:
        return sorted(_DECLARED.values(), key=lambda d: d.key)


def forget(scope: str, schedule_id: str) -> None:
    """Drop a declaration from this process (test support: declarations are process-wide)."""
    with _LOCK:
        _DECLARED.pop((scope, schedule_id), None)


def autodiscover() -> None:
    """Import ``<app>.work`` (targets) and then ``<app>.schedules`` of every installed app.

    An error raised while importing a ``schedules`` module that exists propagates with a note
    naming the module (the rule of Work autodiscovery); a ``DurableError`` -- a declaration
    ``declare()`` refused -- also names it in its context (``module``), so ``sync_schedules``
    can say which file to fix in one line."""
    from django.apps import apps

    from durable_schedule.work import autodiscover as work_autodiscover

    work_autodiscover()
    for app_config in apps.get_app_configs():
        module = f"{app_config.name}.schedules"
        try:
            import_module(module)
        except Exception as exc:
            if not module_has_submodule(app_config.module, "schedules"):
                continue  # the app has no schedules module (or its own import failed above)
            exc.add_note(f"raised while durable_schedule imported {module} (schedules "
                         "declared in code)")
            if isinstance(exc, DurableError):
                exc.context.setdefault("module", module)
            raise


# ---------------------------------------------------------------- sync
@dataclass
class SyncReport:
    created: list[tuple[str, str]] = field(default_factory=list)
    updated: list[tuple[str, str, list[str]]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)  # in store, not in code
    pruned: list[tuple[str, str]] = field(default_factory=list)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    #: Changed declarations of schedules an operator suspended: not updated (an update would
    #: lift the suspension); applied by the first sync after an operator repairs it.
    held: list[tuple[str, str, list[str]]] = field(default_factory=list)
    #: Schedules sync did not create, taken over with ``adopt``: one new generation each,
    #: with the facts that differed from the declaration.
    adopted: list[tuple[str, str, list[str]]] = field(default_factory=list)
    #: Of ``held``: adoptions (``adopt``) held because an operator suspended the schedule; it
    #: stays unmanaged until a sync with ``adopt`` after the repair.
    held_adoptions: list[tuple[str, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"created {s}/{i}" for s, i in self.created]
        out += [f"updated {s}/{i} ({', '.join(f)})" for s, i, f in self.updated]
        out += [f"adopted {s}/{i} ({', '.join(f) or 'nothing differed'}): now managed by sync"
                for s, i, f in self.adopted]
        out += [f"unchanged {s}/{i}" for s, i in self.unchanged]
        out += [f"held {s}/{i} ({', '.join(f) or 'nothing'} changed): suspended by an operator, "
                "not updated; the next sync after the suspension is repaired applies it"
                for s, i, f in self.held if (s, i) not in self.held_adoptions]
        out += [f"held {s}/{i} (adoption; {', '.join(f) or 'nothing'} changed): suspended by "
                "an operator, not adopted; the next sync --adopt after the suspension is "
                "repaired adopts it" for s, i, f in self.held if (s, i) in self.held_adoptions]
        out += [f"pruned {s}/{i}" for s, i in self.pruned]
        out += [f"removed from code {s}/{i} (kept; --prune deletes it)"
                for s, i in self.removed if (s, i) not in self.pruned]
        out += [f"conflict {s}/{i}: {why}" for s, i, why in self.conflicts]
        return out

    def summary(self) -> str:
        return (f"created={len(self.created)} updated={len(self.updated)} "
                f"unchanged={len(self.unchanged)} removed={len(self.removed)} "
                f"pruned={len(self.pruned)} conflicts={len(self.conflicts)}"
                + (f" held={len(self.held)}" if self.held else "")
                + (f" adopted={len(self.adopted)}" if self.adopted else ""))


class _DryRun(Exception):
    """Raised inside the sync transaction to roll a dry run back."""


def sync(*, dry_run: bool = False, prune: bool = False,
         declared: list[Declaration] | None = None, allow_empty: bool = False,
         adopt: bool = False) -> SyncReport:
    """Make the store match the declarations (see the module docstring); one transaction.

    ``dry_run``: compute and report the same changes, then roll everything back.
    ``prune`` with no declaration at all is refused (DS159) unless ``allow_empty``: it would
    delete every schedule sync manages, in every scope, and is far more often a discovery
    mistake (wrong settings, an app missing from INSTALLED_APPS) than an intent.
    ``adopt``: a declaration naming a schedule sync did not create takes it over (one new
    generation under the sync actor); without it that is a conflict (DS157), left untouched.
    """
    for name, flag in (("dry_run", dry_run), ("prune", prune), ("allow_empty", allow_empty),
                       ("adopt", adopt)):
        if type(flag) is not bool:
            # Read as its truthiness, prune="no" pruned and allow_empty="false" let a prune
            # with nothing declared delete every managed schedule.
            raise InvalidArgument(f"{name} must be True or False", field=name,
                                  got=f"{type(flag).__name__} {flag!r}"[:80])
    wanted = _one_per_identity(declarations() if declared is None else _listed(declared))
    if prune and not wanted and not allow_empty:
        raise EmptyPruneRefused("no schedule is declared: --prune would delete every schedule "
                                "sync manages, in every scope; nothing was changed")
    scopes = sorted({d.scope for d in wanted} | set(_scopes_with_schedules()))
    report = SyncReport()
    alias = conf.database_alias()
    try:
        with check.writing_as_sync(), transaction.atomic(using=alias):
            with connection(alias).cursor() as cur:
                cur.execute(query(_QUERIES, "sync_lock"), [SYNC_LOCK_KEY])
            by_key = {d.key: d for d in wanted}
            synced: dict[str, set[str]] = {}
            for decl in wanted:
                with _naming(decl.scope, decl.schedule_id):
                    _apply(decl, report, synced, adopt=adopt)
            for scope in scopes:
                for info in _managed(scope):
                    if (scope, info.schedule_id) in by_key:
                        continue
                    report.removed.append((scope, info.schedule_id))
                    if prune:
                        with _naming(scope, info.schedule_id):
                            api.delete(scope, info.schedule_id, expected_revision=info.revision,
                                       actor=SYNC_ACTOR)
                        report.pruned.append((scope, info.schedule_id))
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return report


@contextmanager
def _naming(scope: str, schedule_id: str) -> Iterator[None]:
    """Name the schedule a refusal is about. The API's errors name the facts it checked (an
    ``At`` in the past, a jitter too long) but not always the identity, and a deploy's sync
    applies many declarations: the operator must learn which one stopped it. The error keeps
    its own code; the sync transaction rolls back as it propagates, so nothing is changed."""
    try:
        yield
    except DurableError as exc:
        exc.context.setdefault("scope", scope)
        exc.context.setdefault("schedule_id", schedule_id)
        exc.context["sync"] = "stopped at this declaration; nothing was changed"
        raise


def _listed(declared: Any) -> list[Declaration]:
    """``sync(declared=...)``: a list (or another iterable, not text or a mapping) of
    ``Declaration`` values, refused with DS406 before anything is read or written otherwise; a
    string or a dict would otherwise be iterated item by item and fail midway with a bare
    ``AttributeError``, and a dict's keys would silently stand for the declarations."""
    if isinstance(declared, (str, bytes, Mapping)) or not hasattr(declared, "__iter__"):
        raise InvalidArgument("declared must be a list of Declaration values",
                              field="declared", got=type(declared).__name__)
    listed = list(declared)
    for position, decl in enumerate(listed):
        if not isinstance(decl, Declaration):
            raise InvalidArgument("declared must be a list of Declaration values (from "
                                  "schedules.declare)", field="declared", position=position,
                                  got=type(decl).__name__)
    return listed


def _one_per_identity(wanted: list[Declaration]) -> list[Declaration]:
    """One declaration per identity, refused (DS145) before any change when one identity comes
    with two different values: applied in turn, they would write two generations on every
    sync, one undoing the other, and an unchanged list would never be a no-op. ``declare()``
    refuses that at import time; a list handed to ``sync(declared=...)`` is checked here."""
    by_key: dict[tuple[str, str], Declaration] = {}
    for decl in wanted:
        existing = by_key.setdefault(decl.key, decl)
        if not _same(existing, decl):
            raise DeclarationConflict("this schedule is declared twice with different values; "
                                      "nothing was changed",
                                      scope=decl.scope, schedule_id=decl.schedule_id)
    return list(by_key.values())


def _apply(decl: Declaration, report: SyncReport, synced: dict[str, set[str]], *,
           adopt: bool) -> None:
    try:
        info = api.get(decl.scope, decl.schedule_id)
    except ScheduleNotFound:
        api.create(decl.scope, decl.schedule_id, decl.spec, decl.target, overlap=decl.overlap,
                   misfire=decl.misfire, safety_window=decl.safety_window, actor=SYNC_ACTOR,
                   **_lifecycle(decl))
        report.created.append(decl.key)
        return
    if info.state == "deleted":
        report.conflicts.append((*decl.key, str(DeclaredIdentityDeleted(
            "the declared identity was deleted"))))
        return
    if decl.scope not in synced:
        synced[decl.scope] = _synced_ids(decl.scope)
    managed = decl.schedule_id in synced[decl.scope]
    if not managed and not adopt:
        # Created by someone else (the API, the admin): updating it from a declaration and a
        # later --prune deleting it would take over a schedule nobody handed to sync.
        report.conflicts.append((*decl.key, str(DeclaredScheduleNotManaged(
            "a schedule with this identity exists and sync_schedules did not create it; "
            "it was not changed", created_by=info.created_by))))
        return
    changed = differences(decl, info)
    if managed and not changed:
        report.unchanged.append(decl.key)
        return
    if info.state == "suspended" and info.suspension_reason == api.OPERATOR_REASON:
        # update() is the repair of a suspension: it would lift an operator's stop (a provider
        # outage, an incident) because a deploy changed the declaration. Only an operator lifts
        # it (re-issue, update); a paused schedule, by contrast, stays paused through update.
        report.held.append((*decl.key, changed))
        if not managed:
            report.held_adoptions.append(decl.key)
        return
    # An adoption writes a generation even when nothing differs: a generation under the sync
    # actor is what makes the schedule managed from now on.
    api.update(decl.scope, decl.schedule_id, expected_revision=info.revision, spec=decl.spec,
               target=decl.target, overlap=decl.overlap, misfire=decl.misfire,
               safety_window=decl.safety_window or conf.safety_window(), actor=SYNC_ACTOR,
               **_lifecycle(decl))
    if managed:
        report.updated.append((*decl.key, changed))
    else:
        synced[decl.scope].add(decl.schedule_id)
        report.adopted.append((*decl.key, changed))


def _lifecycle(decl: Declaration) -> dict[str, Any]:
    # Passed explicitly (None included): the declaration is the whole truth of the generation.
    return {"start_at": decl.start_at, "end_at": decl.end_at, "max_runs": decl.max_runs,
            "jitter": decl.jitter, "buffer_limit": decl.buffer_limit}


def differences(decl: Declaration, info: ScheduleInfo) -> list[str]:
    """The generation facts in which the store's active generation differs from ``decl``."""
    window = decl.safety_window or conf.safety_window()
    facts = {
        "kind": (kind_of(decl.spec), info.kind),
        "spec": (_declared_spec(decl), _stored_spec(info)),
        "target": (decl.target.to_json(), info.target_json),
        "overlap": (decl.overlap, info.overlap),
        "misfire": (decl.misfire, info.misfire),
        "safety_window": (window, info.safety_window),
        "start_at": (decl.start_at, info.start_at),
        "end_at": (decl.end_at, info.end_at),
        "max_runs": (decl.max_runs, info.max_runs),
        "jitter": (decl.jitter, info.jitter),
        "buffer_limit": (decl.buffer_limit, info.buffer_limit),
    }
    return [name for name, (want, have) in facts.items() if _normal(want) != _normal(have)]


def _declared_spec(decl: Declaration) -> Any:
    """What a declaration says about the spec, in the stored JSON form. A ``Cron`` is compared
    with its identity's ``H`` seed and without the tz-rules snapshot: both are filled in when a
    generation is accepted (evaluation/cron/spec.py), so neither is something the code
    declares; a rules change is the cron fence's business, not a deploy's."""
    if isinstance(decl.spec, Cron):
        bound = with_seed(decl.spec, decl.scope, decl.schedule_id)
        return {k: v for k, v in spec_to_json(bound).items() if k != "tz_rules"}
    return spec_to_json(decl.spec)


def _stored_spec(info: ScheduleInfo) -> Any:
    if info.kind == "cron" and isinstance(info.spec_json, dict):
        return {k: v for k, v in info.spec_json.items() if k != "tz_rules"}
    return info.spec_json


def _normal(value: Any) -> Any:
    """A JSON value as ``jsonb`` keeps it, so that an unchanged declaration compares equal to
    what the store returns. ``jsonb`` holds numbers as exact decimals and writes them back
    without an exponent or a negative zero: a declared ``1e+20`` returns as the integer
    ``100000000000000000000`` and ``-0.0`` as ``0.0`` (while ``1`` and ``1.0`` stay apart)."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, default=str)
        return _canonical(json.loads(text, parse_float=Decimal, parse_int=Decimal))
    return value


def _canonical(value: Any) -> Any:
    # Tagged, so that ``true`` and ``1`` (equal in Python) or an array and an object stay apart.
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, _canonical(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("array", tuple(_canonical(v) for v in value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, Decimal):
        # PostgreSQL numeric output: positional digits, the input's scale, no signed zero.
        return ("number", format(value.copy_abs() if value.is_zero() else value, "f"))
    return ("text" if isinstance(value, str) else "null", value)


def _managed(scope: str) -> list[ScheduleInfo]:
    """The live schedules of ``scope`` that sync manages: one of their generations was written
    by sync (created or updated from a declaration). Not only the active generation's actor:
    the repair of a declared schedule (an operator's re-issue, ``durable_tz_rules --apply``)
    writes a generation under its own actor, and the schedule is still the declared one."""
    synced = _synced_ids(scope)
    out: list[ScheduleInfo] = []
    after = ""
    while True:
        page = api.list_schedules(scope, states=["active", "suspended", "paused", "completed"],
                                  after=after, limit=1000)
        out += [i for i in page if i.schedule_id in synced]
        if len(page) < 1000:
            return out
        after = page[-1].schedule_id


def _synced_ids(scope: str) -> set[str]:
    """The schedule ids of ``scope`` with a generation written under the sync actor."""
    with scoped(scope, using=conf.database_alias(), create=False) as cur:
        cur.execute(query(_QUERIES, "synced_schedule_ids"),
                    {"scope_id": scope, "actor": SYNC_ACTOR})
        return {row[0] for row in cur.fetchall()}


def _scopes_with_schedules() -> list[str]:
    """Every scope that has a schedule (each schedule keeps a dispatch row), resolved through
    its routing id the way the processor does -- read before the sync transaction opens."""
    alias = conf.database_alias()
    with connection(alias).cursor() as cur:
        cur.execute(query(_QUERIES, "schedule_routing_ids"))
        routing_ids = [row[0] for row in cur.fetchall()]
    scopes = []
    for routing_id in routing_ids:
        with routed(routing_id, using=alias) as (_cur, scope_id):
            if scope_id is not None:
                scopes.append(scope_id)
    return scopes
