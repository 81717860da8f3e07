"""Which scopes an admin user sees, and how the admin's reads meet row-level security.

Two layers guard every admin page (docs/admin.md "Scopes in the admin"):

1. **The ADMIN_SCOPES setting.** ``DURABLE_SCHEDULE['ADMIN_SCOPES']`` names a callable
   ``user -> list of scope ids | ALL``. Every admin queryset is filtered with
   ``scope_id__in=<that list>`` (dispatch rows, which carry no scope id, through the scope's
   routing id). A scope outside the list asked for by URL is a 403. The default callable shows
   every scope to active superusers and none to other staff: fail closed, like the RLS policy.
2. **A scoped read transaction.** When a page names one scope (``?scope=<id>``, or the user may
   see exactly one), the page's reads and its rendering run inside ``transaction.atomic()`` with
   the transaction-local ``durable_schedule.scope_id`` set (docs/protocol/storage.md), restored on
   the way out. In development the owner is a superuser and RLS does not bind it, so layer 1 is what
   hides other scopes; in a production deployment whose owner is neither superuser nor BYPASSRLS,
   FORCE ROW LEVEL SECURITY binds the owner too and layer 2 is what lets it read at all: without
   a chosen scope the pages are empty, and the change list says so.

The admin reads as the owner (Django's connection of the store's alias, ``DURABLE_SCHEDULE
['DATABASE']``, for every store row: see :func:`store_rows`), not as ``durable_runtime``: it must
also read Django's tables (sessions, users, permissions) in the same request, which the runtime
role may not. Writes never happen here: actions call the public API, which opens its own
``scoped()`` runtime transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs

from django.contrib import admin
from django.core.exceptions import BadRequest, PermissionDenied
from django.db import transaction

from durable_schedule import conf
from durable_schedule.errors import InvalidScope
from durable_schedule.store.models import Scope
from durable_schedule.store.transactions import SCOPE_SETTING, connection, validate_scope_id

#: The query-string parameter that names the scope a page reads in.
SCOPE_PARAM = "scope"


class _AllScopes:
    """Sentinel: the user may see every scope."""

    def __repr__(self) -> str:
        return "ALL"


ALL = _AllScopes()


def superusers_see_all(user) -> object:
    """Default ADMIN_SCOPES: active superusers see every scope, other staff see none."""
    return ALL if user.is_active and user.is_superuser else []


def all_scopes_for_staff(user) -> object:
    """For single-tenant projects: every active staff user sees every scope.

    Django's model permissions still decide which pages and actions each user gets.
    """
    return ALL if user.is_active and user.is_staff else []


@dataclass(frozen=True)
class Visibility:
    """The scopes one user may see: ``scopes is None`` means every scope."""

    scopes: frozenset[str] | None

    @property
    def everything(self) -> bool:
        return self.scopes is None

    def admits(self, scope_id: str) -> bool:
        return self.scopes is None or scope_id in self.scopes

    @property
    def only(self) -> str | None:
        """The single scope this user may see, if there is exactly one."""
        if self.scopes is not None and len(self.scopes) == 1:
            return next(iter(self.scopes))
        return None


def visibility_for(user) -> Visibility:
    """Call ADMIN_SCOPES for ``user``; anything but ALL or an iterable of valid ids is refused."""
    if not getattr(user, "is_active", False):
        return Visibility(frozenset())
    answer = conf.admin_scopes()(user)
    if answer is ALL:
        return Visibility(None)
    if isinstance(answer, str) or not isinstance(answer, Iterable):
        raise TypeError("DURABLE_SCHEDULE['ADMIN_SCOPES'] must return a list of scope ids or ALL, "
                        f"got {type(answer).__name__}")
    scopes = frozenset(answer)
    for scope_id in scopes:
        validate_scope_id(scope_id)
    return Visibility(scopes)


def visibility(request) -> Visibility:
    """The request user's visibility, computed once per request."""
    cached = getattr(request, "_durable_admin_visibility", None)
    if cached is None:
        cached = visibility_for(request.user)
        request._durable_admin_visibility = cached
    return cached


def named_scope(request) -> str | None:
    """``?scope=`` of this page, or of the change list a change page was opened from."""
    value = request.GET.get(SCOPE_PARAM)
    if value is None and "_changelist_filters" in request.GET:
        value = parse_qs(request.GET["_changelist_filters"]).get(SCOPE_PARAM, [None])[-1]
    return value or None


def requested_scope(request) -> str | None:
    """The one scope this page reads in, or None (every visible scope).

    A scope the user may not see is a 403 whatever RLS would have shown; a malformed one is a
    400. A user who may see exactly one scope always reads in it.
    """
    seen = visibility(request)
    value = named_scope(request)
    if value is None:
        return seen.only
    try:
        validate_scope_id(value)
    except InvalidScope as exc:
        raise BadRequest(exc.message) from None
    if not seen.admits(value):
        raise PermissionDenied(f"scope {value!r} is not visible to this user")
    return value


def owner_bypasses_rls(using: str | None = None) -> bool:
    """Whether the admin's connection role escapes row-level security (superuser/BYPASSRLS)."""
    with connection(using).cursor() as cur:
        cur.execute(
            "select rolsuper or rolbypassrls from pg_catalog.pg_roles where rolname = current_user"
        )
        row = cur.fetchone()
    return bool(row and row[0])


@contextmanager
def read_scope(request) -> Iterator[str | None]:
    """Run the block in the page's scope (see the module docstring); yields that scope or None.

    Without a scope nothing is set: the querysets' own filter is then the only guard, and under
    a binding RLS policy every scoped table reads empty (fail closed).
    """
    scope_id = requested_scope(request)
    if scope_id is None:
        yield None
        return
    conn = connection()  # the store's alias: the one store_rows() reads through
    with transaction.atomic(using=conn.alias), conn.cursor() as cur:
        cur.execute("select coalesce(current_setting(%s, true), '')", [SCOPE_SETTING])
        previous = cur.fetchone()[0]
        cur.execute("select set_config(%s, %s, true)", [SCOPE_SETTING, scope_id])
        yield scope_id
        # Leave the caller's transaction as we found it (ATOMIC_REQUESTS, nested tests).
        cur.execute("select set_config(%s, %s, true)", [SCOPE_SETTING, previous])


def store_rows(model):
    """``model``'s manager on the store's alias (``DURABLE_SCHEDULE['DATABASE']``).

    The admin's ORM reads must go where the store lives and where :func:`read_scope` set the
    scope: Django's default router sends them to "default", which is another database (or the
    right one without the scope) when the store lives on its own alias."""
    return model._default_manager.db_manager(conf.database_alias())


def restrict(queryset, request, field: str = "scope_id"):
    """Filter a queryset of scoped rows to the user's visible scopes."""
    seen = visibility(request)
    if seen.everything:
        return queryset
    return queryset.filter(**{f"{field}__in": sorted(seen.scopes)})


def restrict_routed(queryset, request, field: str = "scope_routing_id"):
    """Filter payload-free dispatch rows (no scope id) through their scope's routing id."""
    seen = visibility(request)
    if seen.everything:
        return queryset
    routing = store_rows(Scope).filter(scope_id__in=sorted(seen.scopes)).values("routing_id")
    return queryset.filter(**{f"{field}__in": routing})


def scope_choices(request, limit: int = 50) -> list[str]:
    """The scopes offered in the change list's scope filter (at most ``limit``)."""
    seen = visibility(request)
    if not seen.everything:
        return sorted(seen.scopes)[:limit]
    return list(store_rows(Scope).order_by("scope_id").values_list("scope_id", flat=True)[:limit])


class ScopeFilter(admin.SimpleListFilter):
    """The change list's scope filter; its ``?scope=`` also picks the read transaction's scope."""

    title = "scope"
    parameter_name = SCOPE_PARAM
    #: The field holding the scope id; ``None`` for dispatch rows (filtered by routing id).
    field: str | None = "scope_id"

    def lookups(self, request, model_admin):
        return [(s, s) for s in scope_choices(request)]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if self.field is None:
            routing = store_rows(Scope).filter(scope_id=value).values("routing_id")
            return queryset.filter(scope_routing_id__in=routing)
        return queryset.filter(**{self.field: value})


class RoutedScopeFilter(ScopeFilter):
    field = None
